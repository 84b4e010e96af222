"""The link in a statement mail that stops these mails, opened signed out."""

from flask import Blueprint

from portal.web.access import PUBLIC
from portal.web.features import Feature

bp = Blueprint("statement_mail", __name__)
feature = Feature(bp, "/statement-mail", PUBLIC)

from portal.reports.pages.statement_mail import routes  # noqa: E402, F401  (registers the views on bp)

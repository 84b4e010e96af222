"""Search over the mirror, and vouchers by id."""

from flask import Blueprint

from portal.web.features import EVERY_ROLE, Feature

bp = Blueprint("search", __name__)
feature = Feature(bp, None, EVERY_ROLE)

from portal.payments.pages.search import routes  # noqa: E402, F401  (registers the views on bp)

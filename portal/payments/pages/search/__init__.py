"""Search over the mirror, and vouchers by id."""

from flask import Blueprint

bp = Blueprint("search", __name__)

from portal.payments.pages.search import routes  # noqa: E402, F401  (registers the views on bp)

"""The public checkout page: where customers land after the hosted payment page."""

from flask import Blueprint

bp = Blueprint("checkout", __name__)

from portal.payments.pages.checkout import routes  # noqa: E402, F401  (registers the views on bp)

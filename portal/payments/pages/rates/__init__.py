"""Exchange rates of the payment service."""

from flask import Blueprint

bp = Blueprint("rates", __name__)

from portal.payments.pages.rates import routes  # noqa: E402, F401  (registers the views on bp)

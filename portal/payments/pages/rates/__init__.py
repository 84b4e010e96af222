"""Exchange rates of the payment service."""

from flask import Blueprint

from portal.web.features import EVERY_ROLE, Feature, MenuEntry

bp = Blueprint("rates", __name__)
feature = Feature(bp, None, EVERY_ROLE, MenuEntry("Rates", "rates.index", 50))

from portal.payments.pages.rates import routes  # noqa: E402, F401  (registers the views on bp)

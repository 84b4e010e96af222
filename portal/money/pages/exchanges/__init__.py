"""Exchange between the merchant's wallets: the rates, a live quote, and the exchange itself."""

from flask import Blueprint

from portal.web.features import EVERY_ROLE, Feature, MenuEntry

bp = Blueprint("exchanges", __name__)
feature = Feature(bp, "/exchange", EVERY_ROLE, MenuEntry("Exchange", "exchanges.exchange", 80))

from portal.money.pages.exchanges import routes  # noqa: E402, F401  (registers the views on bp)

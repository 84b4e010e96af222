"""Exchange between the merchant's wallets: the rates, a live quote, and the exchange itself."""

from flask import Blueprint

bp = Blueprint("exchanges", __name__)

from portal.money.pages.exchanges import routes  # noqa: E402, F401  (registers the views on bp)

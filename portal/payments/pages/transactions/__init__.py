"""Transactions: the list with every filter of the API, and the record."""

from flask import Blueprint

from portal.web.features import EVERY_ROLE, Feature, MenuEntry

bp = Blueprint("transactions", __name__)
feature = Feature(
    bp,
    "/transactions",
    EVERY_ROLE,
    MenuEntry("Transactions", "transactions.index", 40),
)

from portal.payments.pages.transactions import routes  # noqa: E402, F401  (registers the views on bp)

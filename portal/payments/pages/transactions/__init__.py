"""Transactions: the list with every filter of the API, and the record."""

from flask import Blueprint

bp = Blueprint("transactions", __name__)

from portal.payments.pages.transactions import routes  # noqa: E402, F401  (registers the views on bp)

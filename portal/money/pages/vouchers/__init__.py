"""Vouchers: the list with the API's filters, detail, create, cancel and pay off by code."""

from flask import Blueprint

bp = Blueprint("vouchers", __name__)

from portal.money.pages.vouchers import routes  # noqa: E402, F401  (registers the views on bp)

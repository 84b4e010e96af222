"""Withdrawals (owners only): a form, a review page, and one upstream request per confirmation."""

from flask import Blueprint

bp = Blueprint("withdrawals", __name__)

from portal.money.pages.withdrawals import routes  # noqa: E402, F401  (registers the views on bp)

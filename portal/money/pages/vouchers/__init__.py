"""Vouchers: the list with the API's filters, detail, create, cancel and pay off by code."""

from flask import Blueprint

from portal.web.features import EVERY_ROLE, Feature, MenuEntry

bp = Blueprint("vouchers", __name__)
feature = Feature(bp, "/vouchers", EVERY_ROLE, MenuEntry("Vouchers", "vouchers.index", 70))

from portal.money.pages.vouchers import routes  # noqa: E402, F401  (registers the views on bp)

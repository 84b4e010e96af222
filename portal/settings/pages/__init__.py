"""Owner settings: the API connection and the merchant's users."""

from flask import Blueprint

from portal.web.features import OWNERS, Feature, MenuEntry

bp = Blueprint("settings", __name__)
feature = Feature(bp, "/settings", OWNERS, MenuEntry("Settings", "settings.api", 100))

from portal.settings.pages import mirror, notifications, routes  # noqa: E402, F401  (the views register themselves on bp)

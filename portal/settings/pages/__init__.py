"""Owner settings: the API connection and the merchant's users."""

from flask import Blueprint

bp = Blueprint("settings", __name__)

from portal.settings.pages import mirror, notifications, routes  # noqa: E402, F401  (the views register themselves on bp)

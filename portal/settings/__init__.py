"""Owner settings: the API connection and the merchant's users."""

from flask import Blueprint

bp = Blueprint("settings", __name__)

from portal.settings import notifications, routes  # noqa: E402, F401  (registers the views on bp)

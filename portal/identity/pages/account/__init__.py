"""The signed-in user's own settings (time zone)."""

from flask import Blueprint

bp = Blueprint("account", __name__)

from portal.identity.pages.account import routes  # noqa: E402, F401  (registers the views on bp)

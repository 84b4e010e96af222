"""The signed-in user's own settings (time zone)."""

from flask import Blueprint

from portal.web.features import EVERY_ROLE, Feature

bp = Blueprint("account", __name__)
feature = Feature(bp, None, EVERY_ROLE)

from portal.identity.pages.account import passkeys, routes  # noqa: E402, F401  (the views on bp)

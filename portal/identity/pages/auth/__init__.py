"""Sign-in and sign-out; passwords set from an invitation or a reset link."""

from flask import Blueprint

from portal.web.access import PUBLIC
from portal.web.features import Feature

bp = Blueprint("auth", __name__)
feature = Feature(bp, None, PUBLIC)

from portal.identity.pages.auth import links, routes  # noqa: E402, F401  (registers the views on bp)

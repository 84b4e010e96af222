"""Sign-in and sign-out; passwords set from an invitation or a reset link."""

from flask import Blueprint

bp = Blueprint("auth", __name__)

from portal.identity.pages.auth import links, routes  # noqa: E402, F401  (registers the views on bp)

"""Sign-in and sign-out."""

from flask import Blueprint

bp = Blueprint("auth", __name__)

from portal.auth import routes  # noqa: E402, F401  (registers the views on bp)

"""Owner settings: the API connection and the merchant's users."""

from flask import Blueprint

bp = Blueprint("settings", __name__)

from portal.settings import (  # noqa: E402  (the views register themselves on bp)
    mirror,  # noqa: F401  (the mirror's panel and button)
    routes,  # noqa: F401
)

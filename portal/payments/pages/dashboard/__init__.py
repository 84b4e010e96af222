"""The dashboard and the liveness probe."""

from flask import Blueprint

bp = Blueprint("dashboard", __name__)

from portal.payments.pages.dashboard import routes  # noqa: E402, F401  (registers the views on bp)

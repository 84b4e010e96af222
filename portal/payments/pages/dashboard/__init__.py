"""The dashboard and the liveness probe."""

from flask import Blueprint

from portal.web.features import EVERY_ROLE, Feature, MenuEntry

bp = Blueprint("dashboard", __name__)
feature = Feature(bp, None, EVERY_ROLE, MenuEntry("Dashboard", "dashboard.index", 10))

from portal.payments.pages.dashboard import routes  # noqa: E402, F401  (registers the views on bp)

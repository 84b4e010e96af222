"""Approvals: money above the owners' limits waits here for an owner other than the one who
asked; the menu counts what waits."""

from flask import Blueprint

from portal.money.rules import approvals
from portal.web.features import OWNERS, Feature, MenuEntry

bp = Blueprint("approvals", __name__)
feature = Feature(
    bp, "/approvals", OWNERS, MenuEntry("Approvals", "approvals.index", 62, count=approvals.count)
)

from portal.money.pages.approvals import routes  # noqa: E402, F401  (registers the views on bp)

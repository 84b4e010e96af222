"""Withdrawals: owners fill a form, review it, and send one upstream request per confirmation;
accountants read the list and its export."""

from flask import Blueprint

from portal.identity.models import Role
from portal.web.features import Feature, MenuEntry

bp = Blueprint("withdrawals", __name__)
feature = Feature(
    bp,
    "/withdrawals",
    frozenset({Role.OWNER, Role.ACCOUNTANT}),
    MenuEntry("Withdrawals", "withdrawals.index", 60),
)

from portal.money.pages.withdrawals import routes  # noqa: E402, F401  (registers the views on bp)

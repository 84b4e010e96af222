"""Balances: each wallet's balance derived from the ledger, and its movements, for owners and
accountants; owners enter a balance as of a moment (its opening, then adjustments)."""

from flask import Blueprint

from portal.identity.models import Role
from portal.web.features import Feature, MenuEntry

bp = Blueprint("balances", __name__)
feature = Feature(
    bp,
    "/balances",
    frozenset({Role.OWNER, Role.ACCOUNTANT}),
    MenuEntry("Balances", "balances.index", 55),
)

from portal.money.pages.balances import routes  # noqa: E402, F401  (registers the views on bp)

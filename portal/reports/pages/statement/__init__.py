"""The statement of a period, per currency and in the reporting currency, for owners and
accountants."""

from flask import Blueprint

from portal.identity.models import Role
from portal.web.features import Feature, MenuEntry

bp = Blueprint("statement", __name__)
feature = Feature(
    bp,
    "/reports",
    frozenset({Role.OWNER, Role.ACCOUNTANT}),
    MenuEntry("Statement", "statement.index", 57),
)

from portal.reports.pages.statement import routes  # noqa: E402, F401  (registers the views on bp)

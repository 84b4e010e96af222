"""What every signed-in page shows around its content: the menu by role, with how many items
need attention, and the sandbox banner."""

from __future__ import annotations

from flask import Flask, request, url_for
from flask_login import current_user

from portal.models import Environment
from portal.rules import attention
from portal.web.access import may_open

# The areas of design.md's URL map that exist so far, in menu order; each shows only to the
# roles its view allows.
NAVIGATION = (
    ("Dashboard", "dashboard.index"),
    ("Needs attention", "attention.index"),
    ("Operations", "operations.index"),
    ("Transactions", "transactions.index"),
    ("Rates", "rates.index"),
    ("Withdrawals", "withdrawals.index"),
    ("Vouchers", "vouchers.index"),
    ("Exchange", "exchanges.exchange"),
    ("Cross exchanges", "cross_exchanges.index"),
    ("Settings", "settings.api"),
    ("Audit", "audit_log.index"),
)


def layout_context() -> dict[str, object]:
    """Navigation and the sandbox banner for the signed-in user.

    Each entry is (label, URL, current, count): the count of items that need attention (one
    COUNT query on the mirror), 0 for the other entries; the menu shows it when there are any.
    """
    if not current_user.is_authenticated:
        return {"navigation": [], "sandbox": False, "may_open": may_open}
    navigation = [
        (
            label,
            url_for(endpoint),
            request.blueprint == endpoint.split(".")[0],
            attention.count(current_user.merchant_id) if endpoint == "attention.index" else 0,
        )
        for label, endpoint in NAVIGATION
        if may_open(endpoint)
    ]
    connection = current_user.merchant.api_connection
    sandbox = connection is not None and connection.environment == Environment.SANDBOX
    return {"navigation": navigation, "sandbox": sandbox, "may_open": may_open}


def init_app(app: Flask) -> None:
    app.context_processor(layout_context)

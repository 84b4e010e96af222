"""What every page shares: navigation by role, the sandbox banner, page-or-fragment rendering."""

from __future__ import annotations

from flask import Flask, make_response, render_template, request, url_for
from flask_login import current_user
from htmx_flask.requests import HtmxHeaders
from werkzeug.wrappers import Response

from portal.access import may_open
from portal.models import Environment

# What a view returns: a response, a rendered page, or a page with its status code.
PageAnswer = Response | str | tuple[str, int]

# The areas of design.md's URL map that exist so far, in menu order; each shows only to the
# roles its view allows.
NAVIGATION = (
    ("Dashboard", "dashboard.index"),
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


def wants_fragment() -> bool:
    """An htmx request for part of a page (boosted navigation still gets the whole page)."""
    htmx = HtmxHeaders(request.headers)  # what `request.htmx` holds, typed
    return bool(htmx) and not htmx.boosted


def render_page(template: str, fragment: str, status: int = 200, **context: object) -> Response:
    """The full page, or for an htmx request only the fragment that the page includes."""
    response = make_response(
        render_template(fragment if wants_fragment() else template, **context), status
    )
    response.vary.add("HX-Request")
    response.vary.add("HX-Boosted")
    return response


def layout_context() -> dict[str, object]:
    """Navigation and the sandbox banner for the signed-in user."""
    if not current_user.is_authenticated:
        return {"navigation": [], "sandbox": False, "may_open": may_open}
    navigation = [
        (label, url_for(endpoint), request.blueprint == endpoint.split(".")[0])
        for label, endpoint in NAVIGATION
        if may_open(endpoint)
    ]
    connection = current_user.merchant.api_connection
    sandbox = connection is not None and connection.environment == Environment.SANDBOX
    return {"navigation": navigation, "sandbox": sandbox, "may_open": may_open}


def init_app(app: Flask) -> None:
    app.context_processor(layout_context)

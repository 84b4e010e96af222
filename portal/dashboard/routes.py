"""The signed-in home page, and `/healthz` for load balancers."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

from flask import jsonify
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import MerchantApiClient
from portal.dashboard import bp
from portal.rules import attempts
from portal.rules.connection import in_background, masked_tokens
from portal.rules.dashboard import CHART_HEIGHT, CHART_WIDTH, summarise
from portal.rules.rates import rate_rows
from portal.web.access import ALL_ROLES, public, roles
from portal.web.merchant import current_api
from portal.web.pages import polled_by, render_page
from portal.web.refusals import unless_unavailable

LATEST = 5
PAGE, LATEST_FRAGMENT = "dashboard/index.html", "dashboard/_latest.html"
# The element that asks for the latest operations again while one of them can still change;
# only that part is read again (the 30 days' figures read every page of the month).
LATEST_POLLER = "latest-operations"


@bp.route("/")
@roles(*ALL_ROLES)
def index() -> Response:
    """The last 30 days at a glance, the latest operations and the current rates."""
    connection = current_user.merchant.api_connection
    context: dict[str, object] = {"connection": connection}
    if connection is not None and polled_by(LATEST_POLLER):
        latest_only = current_api().list_operations(per_page=LATEST).items
        return render_page(PAGE, LATEST_FRAGMENT, 200, latest=latest_only, poller=LATEST_POLLER)
    if connection is not None:
        context["token_mask"] = masked_tokens(connection)[0]
        # While the payment service does not answer, the page says so instead of its figures.
        figures = unless_unavailable(partial(_figures, current_api()))
        context |= figures if figures is not None else {"api_down": True}
    return render_page(PAGE, PAGE, 200, poller=LATEST_POLLER, **context)


def _figures(api: MerchantApiClient) -> dict[str, object]:
    """The summary, the latest operations and the rates, asked for at once."""
    latest = in_background(api.list_operations, per_page=LATEST)
    rates = in_background(api.get_rates)  # both asked while the summary reads its pages
    return {
        "summary": summarise(api),
        "latest": latest.result().items,
        "rows": rate_rows(rates.result()),
        "fetched_at": datetime.now(UTC),
        "chart": {"width": CHART_WIDTH, "height": CHART_HEIGHT},
    }


@bp.route("/healthz")
@public
def healthz() -> Response:
    """Liveness: the process answers (no login, no database, no API call).

    The limit store is reported but never fails it: while it is unreachable, sign-in attempts
    are counted in each process's memory ("degraded").
    """
    return jsonify(status="ok", limit_store="ok" if attempts.store().healthy() else "degraded")

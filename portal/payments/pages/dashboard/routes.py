"""The signed-in home page, and `/healthz` for load balancers."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

from flask import current_app, jsonify, request
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import MerchantApiClient
from portal.identity.models import Merchant
from portal.identity.rules import attempts
from portal.money.rules.balances import balances
from portal.payments.pages.dashboard import bp
from portal.payments.rules.dashboard import (
    CHART_HEIGHT,
    CHART_WIDTH,
    FOLLOWED_STATES,
    Apart,
    Period,
    summarise,
)
from portal.payments.rules.rates import rate_rows
from portal.payments.rules.state_words import STATE_WORDS
from portal.periods import Preset
from portal.settings.rules.connection import in_background, masked_tokens
from portal.web.access import ALL_ROLES, may_open, public, roles
from portal.web.api_errors import unless_unavailable
from portal.web.formatting import user_zone, user_zone_name
from portal.web.merchant import current_api
from portal.web.periods import PeriodForm
from portal.web.rendering import polled_by, render_page

LATEST = 5
APART_WORDS = {Apart.WITHDRAWAL: "Withdrawals", Apart.CROSS_EXCHANGE: "Cross exchanges"}
PAGE, LATEST_FRAGMENT = "dashboard/index.html", "dashboard/_latest.html"
# The element that asks for the latest operations again while one of them can still change;
# only that part is read again.
LATEST_POLLER = "latest-operations"
PRESETS = (
    Preset.TODAY,
    Preset.SEVEN_DAYS,
    Preset.THIRTY_DAYS,
    Preset.THIS_MONTH,
    Preset.LAST_MONTH,
)
DEFAULT_PRESET = Preset.THIRTY_DAYS


@bp.route("/")
@roles(*ALL_ROLES)
def index() -> Response:
    """The figures of the period asked for (from the mirror), the latest operations and the
    current rates (from the API)."""
    connection = current_user.merchant.api_connection
    context: dict[str, object] = {"connection": connection}
    if connection is not None and polled_by(LATEST_POLLER):
        latest_only = current_api().list_operations(per_page=LATEST).items
        return render_page(PAGE, LATEST_FRAGMENT, 200, latest=latest_only, poller=LATEST_POLLER)
    if connection is not None:
        context["token_mask"] = masked_tokens(connection)[0]
        context |= _figures(
            current_user.merchant, PeriodForm(request.args, PRESETS, DEFAULT_PRESET)
        )
        # While the payment service does not answer, the page says so instead of its parts.
        live = unless_unavailable(partial(_from_the_api, current_api()))
        context |= live if live is not None else {"api_down": True}
    return render_page(PAGE, PAGE, 200, poller=LATEST_POLLER, **context)


def _figures(merchant: Merchant, form: PeriodForm) -> dict[str, object]:
    """The period's summary from the ledger and the mirror, once the mirror has synced at
    least once."""
    zone = user_zone()
    since, until, preset, refused = form.days(datetime.now(zone).date())
    synced = merchant.last_synced_at
    connection = merchant.api_connection
    assert connection is not None  # the figures are asked for a connected merchant only
    period = Period(since, until, zone)
    return {
        "form": form,
        "preset": preset,
        "period_title": form.title(since, until, preset),
        "period_error": refused,
        "synced_at": synced,
        "sync_seconds": current_app.config["SYNC_SECONDS"],
        # The balances, for those who may open their page (owners and accountants).
        "balances": balances(merchant) if may_open("balances.index") else None,
        "summary": (
            summarise(merchant.id, connection.generation, merchant.reporting_currency, period)
            if synced
            else None
        ),
        "followed": [(state, STATE_WORDS[state]) for state in FOLLOWED_STATES],
        "apart_words": APART_WORDS,
        "zone_name": user_zone_name(),
        "chart": {"width": CHART_WIDTH, "height": CHART_HEIGHT},
    }


def _from_the_api(api: MerchantApiClient) -> dict[str, object]:
    """The latest operations and the rates, asked for at once."""
    rates = in_background(api.get_rates)
    return {
        "latest": api.list_operations(per_page=LATEST).items,
        "rows": rate_rows(rates.result()),
        "fetched_at": datetime.now(UTC),
    }


@bp.route("/healthz")
@public
def healthz() -> Response:
    """Liveness: the process answers (no login, no database, no API call).

    The limit store is reported but never fails it: while it is unreachable, sign-in attempts
    are counted in each process's memory ("degraded").
    """
    return jsonify(status="ok", limit_store="ok" if attempts.store().healthy() else "degraded")

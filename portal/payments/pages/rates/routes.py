"""`/rates`: the current rates as a table; the page refreshes it with htmx every 30 seconds."""

from __future__ import annotations

from datetime import UTC, datetime

from werkzeug.wrappers import Response

from portal.payments.pages.rates import bp
from portal.payments.rules.rates import rate_rows
from portal.web.access import ALL_ROLES, roles
from portal.web.merchant import current_api
from portal.web.rendering import render_page


@bp.route("/rates")
@roles(*ALL_ROLES)
def index() -> Response:
    """The rates page; an htmx request (the 30-second poll) gets only the table's section."""
    return render_page(
        "rates/index.html",
        "rates/_rates.html",
        rows=rate_rows(current_api().get_rates()),
        fetched_at=datetime.now(UTC),
    )

"""`/rates`: the current rates as a table; the page refreshes it with htmx every 30 seconds."""

from __future__ import annotations

from datetime import UTC, datetime

from werkzeug.wrappers import Response

from portal.access import ALL_ROLES, roles
from portal.layout import render_page
from portal.rates import bp
from portal.rates.pairs import rate_rows
from portal.services.api import current_api


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

"""`/rates`: the current rates as a table; the page refreshes it with htmx every 30 seconds."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

from flask_login import current_user
from werkzeug.wrappers import Response

from portal.payments.pages.rates import bp
from portal.payments.rules.rates import RatesRead, rate_rows, recorded_rates
from portal.web.access import ALL_ROLES, roles
from portal.web.api_errors import read_or_mirror
from portal.web.merchant import current_api
from portal.web.rendering import render_page


@bp.route("/rates")
@roles(*ALL_ROLES)
def index() -> Response:
    """The rates page; an htmx request (the 30-second poll) gets only the table's section.
    While the payment service does not answer, the rates the mirror last recorded."""
    read = read_or_mirror(
        lambda: RatesRead(current_api().get_rates(), datetime.now(UTC)),
        partial(recorded_rates, current_user.merchant_id),
    )
    return render_page(
        "rates/index.html", "rates/_rates.html", rows=rate_rows(read.rates), fetched_at=read.at
    )

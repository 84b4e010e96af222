"""How values of the API read on the pages: exact amounts, timestamps in the user's zone.

Amounts are shown exactly as the API sent them (a `Decimal`, never a float). Timestamps are
shown in the signed-in user's time zone (`users.time_zone`, UTC by default), with the UTC value
at hand for comparing with the payment service.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from decimal import Decimal
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from flask import Flask, g
from flask_login import current_user
from markupsafe import Markup, escape

from portal.api import OPERATION_STATUSES, TRANSACTION_STATUSES

TIMESTAMP = "%Y-%m-%d %H:%M:%S"


@lru_cache(maxsize=1)
def time_zone_names() -> tuple[str, ...]:
    """Every IANA zone name this system knows, sorted (the choices of the account page)."""
    return tuple(sorted(available_timezones() - {"localtime", "Factory"}))


@lru_cache(maxsize=64)
def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def user_zone() -> tzinfo:
    """The signed-in user's zone; UTC for anyone else or an unknown name (once per request)."""
    if "user_zone" not in g:
        name = current_user.time_zone if current_user.is_authenticated else None
        g.user_zone = _zone(name) if name else UTC
    return g.user_zone


def local_time(moment: datetime | None) -> str:
    """`2024-05-01 14:03:22 CEST`: the moment in the user's zone, with the zone shown."""
    if moment is None:
        return "—"
    here = moment.astimezone(user_zone())
    return f"{here.strftime(TIMESTAMP)} {here.tzname()}"


def utc_time(moment: datetime | None) -> str:
    """`2024-05-01 12:03:22 UTC`."""
    if moment is None:
        return "—"
    return moment.astimezone(UTC).strftime(TIMESTAMP) + " UTC"


def iso_utc(moment: datetime) -> str:
    """ISO 8601 in UTC, for the `datetime` attribute of `<time>`."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def is_utc() -> bool:
    return user_zone() in (UTC, _zone("UTC"))


def when(moment: datetime | None, full: bool = False) -> Markup:
    """A `<time>` in the user's zone with the UTC value as its title (and, `full`, beside it).

    Python rather than a macro, and plain escaping rather than `Markup.format`: a list shows
    hundreds of them.
    """
    if moment is None:
        return Markup("—")
    utc = escape(utc_time(moment))
    html = (
        f'<time datetime="{escape(iso_utc(moment))}" title="{utc}">'
        f"{escape(local_time(moment))}</time>"
    )
    if full and not is_utc():
        html += f' <span class="muted">({utc})</span>'
    return Markup(html)  # noqa: S704  (every value above is escaped)


def badge(status: str, known: dict[int, str]) -> Markup:
    """A readable badge for a status text; a text the portal does not know is shown as it came."""
    if status in known.values():
        html = f'<span class="badge status-{escape(status)}">{escape(status.capitalize())}</span>'
    else:
        html = f'<span class="badge status-other">{escape(status)}</span>'
    return Markup(html)  # noqa: S704  (the status is escaped)


def money(amount: Decimal | None, currency: str | None = None) -> str:
    """The exact decimal, with its currency: `0.10000000 BTC`."""
    if amount is None:
        return "—"
    text = format(amount, "f")
    return f"{text} {currency}" if currency else text


def web_link(url: str | None) -> str | None:
    """`url` when it is an http(s) address, safe as a link; None for anything else."""
    if url and url.lower().startswith(("http://", "https://")):
        return url
    return None


def init_app(app: Flask) -> None:
    app.add_template_filter(local_time)
    app.add_template_filter(utc_time)
    app.add_template_filter(iso_utc)
    app.add_template_filter(money)
    app.add_template_global(is_utc)
    app.add_template_global(when)
    app.add_template_global(badge)
    app.add_template_global(web_link)
    app.add_template_global(OPERATION_STATUSES, "operation_statuses")
    app.add_template_global(TRANSACTION_STATUSES, "transaction_statuses")

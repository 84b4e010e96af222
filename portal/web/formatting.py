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
from portal.rules.web_urls import is_web_url


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
        g.user_zone = _zone(name) if name and name != "UTC" else UTC
    return g.user_zone


def user_zone_name() -> str:
    """The name of the zone `user_zone` is: the user's own, or UTC."""
    return "UTC" if user_zone() is UTC else current_user.time_zone


def when(moment: datetime | None, full: bool = False) -> Markup:
    """A `<time>` in the user's zone with the UTC value as its title (and, `full`, beside it).

    `2024-05-01 14:03:22 CEST`, titled `2024-05-01 12:03:22 UTC`. Python rather than a macro,
    each conversion done once, and plain escaping rather than `Markup.format`: a list shows
    hundreds of them.
    """
    if moment is None:
        return Markup("—")
    utc = moment.astimezone(UTC)
    zone = user_zone()
    here = utc if zone is UTC else utc.astimezone(zone)
    utc_text = f"{_seconds(utc)} UTC"
    local_text = f"{_seconds(here)} {here.tzname()}"
    html = (
        f'<time datetime="{utc.isoformat().replace("+00:00", "Z")}" title="{utc_text}">'
        f"{escape(local_text)}</time>"
    )
    if full and local_text != utc_text:  # Etc/UTC, Zulu and the like read as UTC already
        html += f' <span class="muted">({utc_text})</span>'
    return Markup(html)  # noqa: S704  (digits and separators; the zone's name escaped)


def _seconds(moment: datetime) -> str:
    """`2024-05-01 14:03:22`, to the second (isoformat: 4 times faster than strftime)."""
    return moment.isoformat(" ", "seconds")[:19]


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
    """`url` when `is_web_url` finds it an http(s) address, safe as a link; None otherwise."""
    return url if is_web_url(url) else None


def exact(value: object) -> object:
    """What a template prints: a `Decimal` as its digits (`str` writes 0.00000042 as 4.2E-7)."""
    return format(value, "f") if isinstance(value, Decimal) else value


def init_app(app: Flask) -> None:
    app.jinja_env.finalize = exact  # every {{ value }}, so no amount depends on a filter
    app.add_template_filter(money)
    app.add_template_global(when)
    app.add_template_global(user_zone_name)
    app.add_template_global(badge)
    app.add_template_global(web_link)
    app.jinja_env.globals["operation_statuses"] = OPERATION_STATUSES
    app.jinja_env.globals["transaction_statuses"] = TRANSACTION_STATUSES

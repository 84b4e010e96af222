"""How values of the API read on the pages: amounts, timestamps in the user's zone.

Amounts are `Decimal`s, never floats. `money` writes them for people: thousands separators, a
fiat currency's cents, a crypto amount without its trailing zeros, never a digit rounded away (it
lives with the currencies' facts, `portal.money.rules.currencies`, so a mail writes an amount as a
page does); any other `{{ value }}` of a `Decimal` is its exact digits (exports keep exact values
too, `portal.reports.rules.csv_rows`). Timestamps are shown in the signed-in user's time zone
(`users.time_zone`, UTC by default), with the UTC value at hand for comparing with the payment
service.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from zoneinfo import TZPATH, available_timezones

from flask import Flask, current_app, g
from flask_login import current_user
from markupsafe import Markup, escape

from portal.api import OPERATION_STATUSES, TRANSACTION_STATUSES
from portal.database import COUNTED
from portal.identity.rules import passkeys
from portal.money.rules.currencies import ExplorerKind, explorer_url, money
from portal.money.rules.limits import NO_OTHER_OWNER, WAY_OUT
from portal.periods import zone_named
from portal.web.error_messages import error_message
from portal.web_urls import is_web_url

# An operation's category in the words of the operations filter and its column alike.
CATEGORY_NAMES = {
    "application": "Application",
    "manual": "Manual",
    "transfer": "Withdrawal",
    "internal_transfer": "Internal transfer",
}
# The areas of the time-zone database whose zones are places ("Europe/Berlin").
PLACE_AREAS = (
    "Africa/", "America/", "Antarctica/", "Arctic/", "Asia/", "Atlantic/", "Australia/",
    "Europe/", "Indian/", "Pacific/",
)  # fmt: skip


@lru_cache(maxsize=1)
def time_zone_names() -> tuple[str, ...]:
    """The choices of the account page: places, sorted, then UTC.

    Places are the zones the time-zone database lists by country (zone.tab, zone1970.tab), so
    no alias ("GB-Eire", "W-SU", "US/Eastern") or old name ("Asia/Calcutta") is offered; a
    system without those tables offers the names of the place areas.
    """
    known = available_timezones()
    places = _listed_zones() & known or {name for name in known if name.startswith(PLACE_AREAS)}
    return (*sorted(places), "UTC")


def _listed_zones() -> set[str]:
    """The zone names of zone.tab and zone1970.tab (third column) in the first zoneinfo folder
    that has them."""
    for folder in map(Path, TZPATH):
        tables = [folder / "zone.tab", folder / "zone1970.tab"]
        if any(table.is_file() for table in tables):
            return {
                line.split("\t")[2]
                for table in tables
                if table.is_file()
                for line in table.read_text(encoding="utf-8").splitlines()
                if line and not line.startswith("#") and line.count("\t") >= 2
            }
    return set()


def user_zone() -> tzinfo:
    """The signed-in user's zone; UTC for anyone else or an unknown name (once per request)."""
    zone = g.get("user_zone")
    if zone is None:
        name = current_user.time_zone if current_user.is_authenticated else None
        zone = g.user_zone = zone_named(name) if name and name != "UTC" else UTC
    return zone


def user_zone_name() -> str:
    """The name of the zone `user_zone` is: the user's own, or UTC."""
    return "UTC" if user_zone() is UTC else current_user.time_zone


def when(moment: datetime | None, full: bool = False) -> Markup:
    """A `<time>` in the user's zone with the UTC value as its title (and, `full`, beside it).

    `2024-05-01 14:03:22 CEST`, titled `2024-05-01 12:03:22 UTC`. Python rather than a macro,
    each text cut from one isoformat, and plain escaping rather than `Markup.format`: a list
    shows hundreds of them.
    """
    if moment is None:
        return Markup("—")
    utc = moment.astimezone(UTC)
    stamp = utc.isoformat()
    utc_text = f"{_seconds(stamp)} UTC"
    zone = user_zone()
    if zone is UTC:
        local_text = utc_text
    else:
        here = utc.astimezone(zone)
        local_text = str(escape(f"{_seconds(here.isoformat())} {here.tzname()}"))
    html = f'<time datetime="{stamp.replace("+00:00", "Z")}" title="{utc_text}">{local_text}</time>'
    if full and local_text != utc_text:  # Etc/UTC, Zulu and the like read as UTC already
        html += f' <span class="muted">({utc_text})</span>'
    return Markup(html)  # noqa: S704  (digits and separators; the zone's name escaped)


def _seconds(isoformat: str) -> str:
    """`2024-05-01 14:03:22` from `2024-05-01T14:03:22.5+02:00`, to the second."""
    return f"{isoformat[:10]} {isoformat[11:19]}"


def badge(status: str, known: dict[int, str], words: str | None = None) -> Markup:
    """A readable badge for a status text (`words`, or the status capitalized); a text the
    portal does not know is shown as it came."""
    return _badge(status, status in known.values(), words or status.capitalize())


@lru_cache(maxsize=256)
def _badge(status: str, known: bool, words: str) -> Markup:
    """The badge's HTML, made once per status: a list shows the same few on every row."""
    if known:
        html = f'<span class="badge status-{escape(status)}">{escape(words)}</span>'
    else:
        html = f'<span class="badge status-other">{escape(status)}</span>'
    return Markup(html)  # noqa: S704  (the status is escaped)


def category_name(category: str) -> str:
    """The category's name as the filter offers it; one the portal does not know, as it came."""
    return CATEGORY_NAMES.get(category, category)


def web_link(url: str | None) -> str | None:
    """`url` when `is_web_url` finds it an http(s) address, safe as a link; None otherwise."""
    return url if is_web_url(url) else None


def chain_ref(value: str | None, currency: str | None, kind: ExplorerKind) -> Markup:
    """A hash or an address: a link to the block explorer the operator set for the merchant's
    environment and `currency` (else plain text), and a Copy button that `static/js/copy.js`
    shows (without JavaScript it stays hidden)."""
    if not value:
        return Markup("—")
    url = explorer_url(current_app.config["EXPLORER_URLS"], _environment(), currency, kind, value)
    text = escape(value)
    shown = f'<a href="{escape(url)}" rel="noopener noreferrer">{text}</a>' if url else text
    what = "address" if kind == "address" else "hash"
    return Markup(  # noqa: S704  (the value and the URL are escaped)
        f'<span class="chain-ref"><code>{shown}</code> <button type="button" class="button '
        f'secondary copy" data-copy="{text}" hidden>Copy<span class="visually-hidden"> {what}'
        '</span></button><span class="copy-status" role="status"></span></span>'
    )


def _environment() -> str:
    """The environment the merchant is connected to ("" when not), read once per request: a
    list of a hundred rows links each of their hashes and addresses."""
    environment = g.get("explorer_environment")
    if environment is None:
        authenticated = current_user.is_authenticated
        connection = current_user.merchant.api_connection if authenticated else None
        environment = g.explorer_environment = connection.environment.value if connection else ""
    return environment


def exact(value: object) -> object:
    """What a template prints: a `Decimal` as its digits (`str` writes 0.00000042 as 4.2E-7)."""
    return format(value, "f") if isinstance(value, Decimal) else value


def counted(total: int) -> str:
    """A count made up to one more than COUNTED, as a list's heading says it."""
    return f"{total:,}" if total <= COUNTED else f"More than {COUNTED:,}"


def badge_count(total: int) -> str:
    """A count made up to one more than COUNTED, in a menu's badge: past COUNTED, "1,000+"."""
    return f"{total:,}" if total <= COUNTED else f"{COUNTED:,}+"


def passkeys_on() -> bool:
    """Whether this portal's public URL lets browsers use passkeys (not an IP address)."""
    return passkeys.off_reason() is None


def init_app(app: Flask) -> None:
    app.jinja_env.finalize = exact  # every {{ value }}, so no amount depends on a filter
    app.add_template_filter(money)
    app.add_template_filter(category_name)
    app.add_template_filter(counted)
    app.add_template_filter(badge_count)
    app.add_template_global(when)
    app.add_template_global(user_zone_name)
    app.add_template_global(badge)
    app.add_template_global(web_link)
    app.add_template_global(chain_ref)
    app.add_template_global(error_message)  # what an error code a record kept means to a person
    app.add_template_global(passkeys_on)
    app.jinja_env.globals["operation_statuses"] = OPERATION_STATUSES
    app.jinja_env.globals["transaction_statuses"] = TRANSACTION_STATUSES
    app.jinja_env.globals["no_other_owner"] = NO_OTHER_OWNER
    app.jinja_env.globals["way_out"] = WAY_OUT

"""What the attacks on every route share: hostile strings, URL building over url_map, and the
checks. The portal they are aimed at is built in tests/support/hostile_portal.py."""

from __future__ import annotations

import base64
import contextlib
import csv
import io
import logging
import re
import sqlite3
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, quote_plus, unquote, urljoin, urlsplit

from flask import Flask, url_for
from markupsafe import escape

# Who asks: nobody signed in, each role of the hostile portal's merchant, and the owner of
# another one.
VISITORS = ("anonymous", "owner", "operator", "accountant", "other")
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# Markup that would run if a page put it into the HTML unescaped.
XSS = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "'><svg onload=alert(1)>",
)
# Cells a spreadsheet would run as formulas (OWASP CSV injection).
FORMULAS = (
    '=HYPERLINK("http://evil.test","x")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1+1)",
    "\t=1+1",
    "\r=1+1",
)
HOSTILE = XSS + FORMULAS
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")
# An email that passes the portal's check and is markup all the same.
HOSTILE_EMAIL = '"><img/src=x/onerror=alert(1)>@evil.test'


def url_of(app: Flask, rule, ids: dict[str, object]) -> str:
    """The rule's URL with a real value for each of its arguments (a KeyError names a new one)."""
    with app.test_request_context():
        return url_for(rule.endpoint, **{name: ids[name] for name in rule.arguments})


def get_urls(app: Flask, ids: dict[str, object]) -> list[tuple[str, str]]:
    """(endpoint, url) of every GET route of url_map, with real ids."""
    return [
        (rule.endpoint, url_of(app, rule, ids))
        for rule in app.url_map.iter_rules()
        if "GET" in rule.methods
    ]


# --- State ---------------------------------------------------------------------------------


# The sandbox's records of money: all a forged request could change upstream.
SANDBOX_TABLES = (
    "operations",
    "transactions",
    "vouchers",
    "wallets",
    "exchanges",
    "cross_exchanges",
    "charged_fees",
)


def _rows(database: Path, columns_of: dict[str, str]) -> dict[str, list[str]]:
    """The rows of each table of a SQLite file (the columns given), through a read-only
    connection: reading them over SQL costs a fraction of the ORM's or the API's pages."""
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as connection:
        return {
            table: sorted(
                map(repr, connection.execute(f"SELECT {columns} FROM {table}"))  # noqa: S608
            )
            for table, columns in columns_of.items()
        }


def snapshot(hostile) -> dict:
    """Everything a forged request could change: every row of every table of the portal, and
    of the sandbox's records of money (its database file, not its paged API)."""
    from portal.extensions import db

    portal = {
        table.name: ", ".join(f'"{c.name}"' for c in table.columns if c.name != "last_seen_at")
        for table in db.metadata.sorted_tables
    }
    return {
        "portal": _rows(hostile.database, portal),
        "sandbox": _rows(hostile.sandbox.database, dict.fromkeys(SANDBOX_TABLES, "*")),
    }


# --- Inert HTML ------------------------------------------------------------------------------


URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "hx-get", "hx-post"})


def _runs_script(url: str) -> bool:
    """A URL that runs script when followed (browsers ignore white space and controls in it)."""
    scheme = re.sub(r"[\s\x00-\x1f]", "", url).lower()
    return scheme.startswith(("javascript:", "vbscript:", "data:text/html"))


class _ActiveContent(HTMLParser):
    """Collects everything in a page that could run script."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name.startswith(("on", "hx-on")):
                self.found.append(f"<{tag} {name}=...>")
            if name in URL_ATTRIBUTES and _runs_script(value or ""):
                self.found.append(f"<{tag} {name}={value!r}>")
        if tag == "script":
            if not dict(attrs).get("src"):
                self.found.append("<script> without src")
            self._in_script = True
        if tag in ("iframe", "object", "embed", "base"):
            self.found.append(f"<{tag}>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.found.append(f"inline script {data.strip()[:40]!r}")


def active_content(html: str) -> list[str]:
    """What in `html` could run script: event handlers, inline scripts, javascript: URLs."""
    parser = _ActiveContent()
    parser.feed(html)
    parser.close()
    raw = [payload for payload in XSS if payload in html]
    return parser.found + [f"raw payload {payload!r}" for payload in raw]


def shows_escaped(html: str, payload: str) -> bool:
    """Whether the page shows `payload` as text (escaped, so visible and inert)."""
    escaped = str(escape(payload))
    return escaped in html or escaped.replace("&#39;", "&#x27;") in html


# --- Headers ---------------------------------------------------------------------------------


def header_problems(response) -> list[str]:
    """What is missing from the response's security headers."""
    headers = response.headers
    problems = []
    policy = headers.get("Content-Security-Policy", "")
    if "frame-ancestors 'none'" not in policy and "frame-ancestors 'self'" not in policy:
        problems.append(f"CSP without frame-ancestors: {policy!r}")
    if "default-src" not in policy or "'unsafe-inline'" in policy or "'unsafe-eval'" in policy:
        problems.append(f"weak CSP: {policy!r}")
    if headers.get("X-Content-Type-Options") != "nosniff":
        problems.append("no X-Content-Type-Options: nosniff")
    if headers.get("Referrer-Policy") not in ("same-origin", "no-referrer", "strict-origin"):
        problems.append(f"Referrer-Policy {headers.get('Referrer-Policy')!r}")
    return problems


# --- Redirects -------------------------------------------------------------------------------

PORTAL = "http://localhost"


def stays_on_portal(location: str) -> bool:
    """Whether a browser following `location` from the portal stays on it, however it reads it.

    Browsers treat backslashes as slashes and drop tabs and newlines, so those are applied
    before resolving; any decoding of the path must not make it leave either.
    """
    for candidate in _readings(location):
        cleaned = re.sub(r"[\t\n\r]", "", candidate).replace("\\", "/").strip()
        resolved = urlsplit(urljoin(PORTAL + "/", cleaned))
        if (resolved.scheme, resolved.netloc) != ("http", "localhost"):
            return False
    return True


def _readings(location: str) -> list[str]:
    readings = [location]
    for _ in range(3):
        readings.append(unquote(readings[-1]))
    return readings


# --- CSV -------------------------------------------------------------------------------------


def csv_cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def formula_cells(text: str) -> list[str]:
    """Cells a spreadsheet would evaluate, also where it splits a cell on `,`, `;` or a tab (its
    list separator); numbers (a negative amount) are not formulas."""
    return [
        piece
        for cell in csv_cells(text)
        for piece in re.split("[,;\t]", cell)
        if piece.lstrip(' "').startswith(FORMULA_STARTS)
        and not re.fullmatch(r"[+-]?\d+(\.\d+)?", piece)
    ]


# --- Secrets ---------------------------------------------------------------------------------


def encodings(secret: str) -> set[str]:
    """The secret as it could show up: plain, URL-encoded, hex and base64 at every alignment."""
    forms = {secret, quote(secret, safe=""), quote_plus(secret), secret.encode().hex()}
    raw = secret.encode()
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * offset + raw).decode().rstrip("=")
            # drop the characters that mix in the padding bytes or what follows the secret
            start = (offset * 4 + 2) // 3
            forms.add(text[start : len(text) - 2])
    return {form for form in forms if len(form) >= 8}


def leaks(text: str, secrets: dict[str, str]) -> list[str]:
    """Names of the secrets found in `text`, in any of their encodings."""
    return [name for name, secret in secrets.items() if any(f in text for f in encodings(secret))]


def secrets_of(hostile) -> dict[str, str]:
    secrets = {
        "application token": hostile.sandbox.token,
        "company token": hostile.sandbox.company_token,
        "SECRET_KEY": hostile.app.config["SECRET_KEY"],
        "webhook signing secret": _webhook_secret(hostile),
    }
    for number, key in enumerate(hostile.app.config["TOKEN_KEYS"]):
        secrets[f"token key {number}"] = key
    return secrets


def _webhook_secret(hostile) -> str:
    """Acme's: shown masked on every page, revealed only by a POST with a fresh second factor."""
    from portal.extensions import db
    from portal.live.models import WebhookEndpoint
    from portal.live.rules import webhooks

    with hostile.app.app_context():
        endpoint = db.session.scalars(db.select(WebhookEndpoint).order_by(WebhookEndpoint.id))
        return webhooks.secret_of(endpoint.first())


class Transcript:
    """Everything an attacker could read: bodies, status lines and headers (cookies too), and
    the log records of the test."""

    def __init__(self, secrets: dict[str, str], caplog) -> None:
        self.secrets = secrets
        self.caplog = caplog
        self.texts: list[tuple[str, str]] = []

    def add(self, what: str, response) -> None:
        body = workbook_text(response) or response.get_data(as_text=True)
        self.texts.append((what, f"{response.status}\n{response.headers}\n{body}"))

    def assert_no_secret(self) -> None:
        """No secret in what was read, nor in a log line so far; both were not empty."""
        assert self.texts, "nothing was looked at"
        found = [(what, hit) for what, text in self.texts if (hit := leaks(text, self.secrets))]
        assert found == []
        records = self.caplog.get_records("setup") + self.caplog.get_records("call")
        assert records, "the check needs log lines to look at"
        assert leaks(log_text(records), self.secrets) == [], "a secret in the log"


def workbook_text(response) -> str | None:
    """Every part of a workbook (`.xlsx`: zipped XML), as text; None for any other answer (a
    HEAD's answer has the workbook's type and no body)."""
    content = response.get_data()
    if not response.mimetype.endswith("spreadsheetml.sheet") or not content:
        return None
    with zipfile.ZipFile(io.BytesIO(content)) as book:
        return "\n".join(book.read(name).decode() for name in book.namelist())


def log_text(records) -> str:
    """The records as a handler writes them (the message, then the traceback if any)."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return "\n".join(formatter.format(record) for record in records)


def transcript_of(hostile, caplog) -> Transcript:
    """A transcript of the hostile portal's secrets, with every log record from DEBUG on."""
    caplog.set_level(logging.DEBUG)
    return Transcript(secrets_of(hostile), caplog)

"""Signed webhooks to the merchant's shop (see docs/webhooks.md for what a shop receives).

Each worker tick (`deliver_due`) first turns new events into deliveries, one per event and
endpoint (a unique pair, so two workers cannot make two), then sends what is due. A delivery is
sent only by the worker whose conditional UPDATE took its lease; a worker killed mid-send leaves
the lease to run out and the same event, with the same id, goes again. A shop may therefore see
an id twice, never one event under two ids.

Settings (`PORTAL_WEBHOOK_*`, defaults below): the timeout (of a whole POST: connecting, sending
and the answer), the backoff and its cap, the retry window, the lease, and whether private and
loopback addresses may receive webhooks.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import ipaddress
import json
import logging
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar
from urllib.parse import urlsplit

import requests
import sqlalchemy as sa
from flask import current_app
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import aliased

from portal import crypto, shutdown
from portal.api.deadline import DeadlinePassed, within
from portal.api.session import PortalSession, WatchedAdapter, dialled_url, pinned_to
from portal.database import iso_utc
from portal.extensions import db, rows_changed
from portal.identity.models import Merchant
from portal.identity.rules import attempts
from portal.live.models import (
    DeliveryState,
    Event,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookReplay,
)
from portal.live.rules import outbox
from portal.live.rules.events import (
    EventType,
    current_generation,
    of_current_connection,
    public_event_id,
    split_money,
    stored_key,
)
from portal.live.rules.webhook_schemas import TEST_TYPE
from portal.web_urls import is_web_url

SIGNATURE_HEADER = "Portal-Signature"
# The Standard Webhooks headers (standardwebhooks.com), which the libraries of every common
# language verify: the event's id, the unix time, and `v1,<base64 HMAC-SHA256>` per secret.
ID_HEADER, TIMESTAMP_HEADER, STANDARD_SIGNATURE_HEADER = (
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
)
USER_AGENT = "MerchantPortal-Webhooks/1"
SECRET_PREFIX = "whsec_"  # noqa: S105 (the prefix, not a secret)
SECRET_BYTES = 32
MASK = "••••"
# The types a shop may choose: every event the mirror writes.
TYPES = tuple(EventType)
# What a shop acts on: a payment to ship, or money that arrived wrong (a person decides).
DEFAULT_TYPES = (
    EventType.OPERATION_CONFIRMED,
    EventType.OPERATION_PARTLY_PAID,
    EventType.OPERATION_OVERPAID,
    EventType.OPERATION_UNDERPAID,
    EventType.OPERATION_PAID_LATE,
    EventType.OPERATION_EXPIRED,
    EventType.OPERATION_CANCELED,
    EventType.OPERATION_FAILED,
    EventType.TRANSACTION_RECEIVED,
    EventType.TRANSACTION_NEEDS_REVIEW,
)
BATCH = 100
SESSION_EXTENSION = "portal.webhooks.session"
# A function that asks the worker to deliver now (portal/live/worker/queue.py registers it).
WAKE_EXTENSION = "portal.webhooks.wake"
POOL_SIZE = 10
MAX_ERROR = 255
# A shop's answer is read up to this much (status is all that counts); a longer one is not read
# further and its connection is closed. The log keeps its first `LOGGED_ANSWER_BYTES`.
MAX_ANSWER_BYTES = 64 * 1024
LOGGED_ANSWER_BYTES = 4 * 1024
ANSWER_CHUNK = 4 * 1024
# How long the log keeps each attempt, with what was sent and the shop's answer.
LOG_DAYS = 30
# An endpoint that answers this is gone: it is switched off after that attempt.
GONE = 410
# IPv6 addresses a shop may have: global unicast, but not 6to4, which carries any IPv4
# address (127.0.0.1 as 2002:7f00:1::). NAT64, IPv4-compatible, mapped and SIIT forms, site-local
# and reserved ranges all lie outside 2000::/3.
GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
# The most endpoints a merchant may have, each with its own URL, secret and types.
MAX_ENDPOINTS = 10
# Endpoints a delivery pass serves side by side, each on its own thread.
ENDPOINTS_AT_ONCE = 4

log = logging.getLogger(__name__)
# This process's delivery threads, the endpoints whose turn is under way on them, and when
# each endpoint's last turn began (the longest waiting go first). An endpoint is known by its
# database and id: a process serving several portals (the tests') keeps their turns apart.
_threads: list[ThreadPoolExecutor] = []
_turns: set[tuple[str, int]] = set()
_turns_lock = threading.Lock()
_served_at: dict[tuple[str, int], float] = {}


def setting(name: str) -> float:
    """A `WEBHOOK_*_SECONDS` setting (portal/config.py) as seconds."""
    return float(current_app.config[name])


def utcnow() -> datetime:
    return datetime.now(UTC)


# --- The endpoint: URL, types, secrets --------------------------------------------------------


class UrlProblem(enum.Enum):
    """Why an address cannot receive webhooks."""

    NOT_WEB = "not an http(s) address"
    USER = "a user name in the address"
    HOST = "a host of other characters than letters, digits, dots, hyphens and underscores"
    UNKNOWN_HOST = "the host cannot be found"
    PRIVATE = "a private, loopback or reserved address"


def private_allowed() -> bool:
    """Private and loopback addresses: refused in production unless
    `PORTAL_WEBHOOK_ALLOW_PRIVATE` is true; allowed elsewhere (the tests' shop is on loopback)
    unless it is false."""
    allowed = current_app.config.get("WEBHOOK_ALLOW_PRIVATE")
    if allowed is None:
        return current_app.config.get("ENV") != "production"
    return bool(allowed)


def url_problem(url: str) -> UrlProblem | None:
    """Why `url` may not receive webhooks, checked when it is saved and before each POST (a
    name may resolve elsewhere later)."""
    problem, _addresses = checked_addresses(url)
    return problem


def checked_addresses(url: str) -> tuple[UrlProblem | None, tuple[str, ...]]:
    """Why `url` may not receive webhooks, or the addresses its host resolves to now, each one
    checked: the POST goes to these (`pinned_to`), not to what a second lookup would say. No
    addresses where private ones are allowed: nothing is checked, nothing is pinned. The host
    looked up is the one the connection dials (`dialled_url`)."""
    if not is_web_url(url):
        return UrlProblem.NOT_WEB, ()
    parts = urlsplit(url)
    if "@" in parts.netloc:
        return UrlProblem.USER, ()
    dialled = dialled_url(url)
    if dialled is None:
        return UrlProblem.HOST, ()
    if private_allowed():
        return None, ()
    host = urlsplit(dialled).hostname
    try:
        found = socket.getaddrinfo(host, parts.port or 443, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return UrlProblem.UNKNOWN_HOST, ()
    addresses = tuple(dict.fromkeys(str(info[4][0]) for info in found))
    if not addresses or not all(map(_public, addresses)):
        return UrlProblem.PRIVATE, ()
    return None, addresses


def _public(address: str) -> bool:
    """Whether a shop may be at `address`: a global unicast address, not one that stands for an
    IPv4 address in IPv6 clothes."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if not ip.is_global or ip.is_multicast:
        return False
    return ip.version == 4 or (ip in GLOBAL_UNICAST and ip not in SIX_TO_FOUR)


def new_secret() -> str:
    """`whsec_` and the standard base64 of 32 random bytes: the form the Standard Webhooks
    libraries load (they base64-decode what follows the prefix)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def standard_key(secret: str) -> bytes | None:
    """The key a Standard Webhooks library reads from `secret`; None for a secret of the old
    form (URL-safe text), which a library would refuse or read as another key."""
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except binascii.Error:
        return None
    return key if len(key) == SECRET_BYTES else None


class TooManyEndpoints(Exception):
    """The merchant has `MAX_ENDPOINTS` already: nothing was added."""


def endpoints_of(merchant: Merchant) -> list[WebhookEndpoint]:
    """The merchant's endpoints, in the order they were added."""
    return list(
        db.session.scalars(
            sa.select(WebhookEndpoint)
            .where(WebhookEndpoint.merchant_id == merchant.id)
            .order_by(WebhookEndpoint.id)
        )
    )


def endpoint_of(merchant: Merchant, endpoint_id: int | None = None) -> WebhookEndpoint | None:
    """The merchant's endpoint of that id (None for anyone else's), or their first one."""
    query = sa.select(WebhookEndpoint).where(WebhookEndpoint.merchant_id == merchant.id)
    if endpoint_id is not None:
        query = query.where(WebhookEndpoint.id == endpoint_id)
    return db.session.scalar(query.order_by(WebhookEndpoint.id).limit(1))


def add_endpoint(merchant: Merchant, url: str, types: list[str]) -> WebhookEndpoint:
    """A new endpoint with its own secret; raises `TooManyEndpoints` past `MAX_ENDPOINTS`."""
    count = sa.select(sa.func.count()).where(WebhookEndpoint.merchant_id == merchant.id)
    if (db.session.scalar(count) or 0) >= MAX_ENDPOINTS:
        raise TooManyEndpoints
    endpoint = WebhookEndpoint(
        merchant_id=merchant.id, secret_encrypted=crypto.encrypt(new_secret())
    )
    db.session.add(endpoint)
    return _set(endpoint, url, types)


def save_endpoint(
    merchant: Merchant, url: str, types: list[str], endpoint: WebhookEndpoint | None = None
) -> WebhookEndpoint:
    """Set the URL and the types of `endpoint` (by default the merchant's first, made at the
    first save); an empty URL switches it off."""
    endpoint = endpoint or endpoint_of(merchant)
    if endpoint is None:
        return add_endpoint(merchant, url, types)
    return _set(endpoint, url, types)


def _set(endpoint: WebhookEndpoint, url: str, types: list[str]) -> WebhookEndpoint:
    """Events written before now are not sent for a type chosen now: the events already due
    are fanned out first, then the endpoint starts from the newest event."""
    if endpoint.enabled and endpoint.id is not None:
        _fan_out(endpoint)
    endpoint.url = dialled_url(url) or url  # as it is dialled (an empty URL as it is)
    endpoint.enabled = bool(url)
    endpoint.event_types = [type_.value for type_ in TYPES if type_.value in types]
    endpoint.since_event_id = _newest_event_id(endpoint.merchant_id)
    db.session.commit()
    return endpoint


def switch(endpoint: WebhookEndpoint, on: bool) -> None:
    """Switch the endpoint on (it needs a URL) or off. Off, its deliveries wait and the events
    written meanwhile are not sent, as when the URL is emptied; on again, the waiting
    deliveries go."""
    if endpoint.enabled:
        _fan_out(endpoint)
    endpoint.enabled = on and bool(endpoint.url)
    endpoint.since_event_id = _newest_event_id(endpoint.merchant_id)
    db.session.commit()


def _newest_event_id(merchant_id: int) -> int:
    newest = db.session.scalar(
        sa.select(sa.func.max(Event.id)).where(Event.merchant_id == merchant_id)
    )
    return newest or 0


def secret_of(endpoint: WebhookEndpoint) -> str:
    return crypto.decrypt(endpoint.secret_encrypted)


def masked_secret(endpoint: WebhookEndpoint) -> str:
    """The secret as the page shows it until an owner reveals it: the prefix and its last 4
    characters, enough to tell which secret the shop holds (the rest is 228 random bits)."""
    return SECRET_PREFIX + "••••" + secret_of(endpoint)[-4:]


def rotate_secret(endpoint: WebhookEndpoint) -> None:
    """A new secret; the one it replaces keeps signing beside it for the rotation window (a
    second rotation within the window drops the oldest)."""
    _replace_secret(endpoint)
    db.session.commit()


def _replace_secret(endpoint: WebhookEndpoint) -> None:
    endpoint.previous_secret_encrypted = endpoint.secret_encrypted
    endpoint.previous_secret_until = utcnow() + timedelta(
        seconds=setting("WEBHOOK_ROTATION_SECONDS")
    )
    endpoint.secret_encrypted = crypto.encrypt(new_secret())
    endpoint.legacy_secret = False


def rotate_legacy_secrets() -> int:
    """Replace every secret of the old form, which the Standard Webhooks libraries cannot load,
    with the rotation's overlap (the old one keeps signing `Portal-Signature` beside the new
    one), and mail the merchant's owners; how many. Each endpoint is taken by one conditional
    UPDATE, so two workers do not rotate (and mail) it twice."""
    rotated = 0
    legacy = WebhookEndpoint.legacy_secret.is_(True)
    for endpoint in _each_taken(WebhookEndpoint, legacy, {"legacy_secret": False}):
        _replace_secret(endpoint)
        until = endpoint.previous_secret_until
        outbox.queue_to_owners(
            endpoint.merchant_id,
            "Your webhook signing secret was replaced",
            f"The portal replaced the signing secret of the webhook endpoint {endpoint.url}: "
            "the new one has the form every Standard Webhooks library loads "
            "(webhook-signature header).\n\n"
            f"The previous secret keeps signing the Portal-Signature header until "
            f"{iso_utc(until) if until else 'now'}. Reveal the new secret in Settings → "
            f"Notifications and put it in your shop before then:\n"
            f"{outbox.portal_link('/settings/notifications')}\n",
        )
        db.session.commit()
        rotated += 1
    return rotated


Taken = TypeVar("Taken", WebhookEndpoint, WebhookReplay)


def _each_taken(
    model: type[Taken], waiting: sa.ColumnElement[bool], taking: dict[str, object]
) -> Iterator[Taken]:
    """Each row where `waiting` holds, taken for this worker alone by one conditional UPDATE
    that sets `taking` (a row another worker took meanwhile is skipped); the caller commits
    before asking for the next."""
    for row_id in db.session.scalars(sa.select(model.id).where(waiting)).all():
        taken = rows_changed(
            sa.update(model)
            .where(model.id == row_id, waiting)
            .values(**taking)
            .execution_options(synchronize_session=False)
        )
        row = db.session.get(model, row_id)
        if taken and row is not None:
            yield row
        else:
            db.session.rollback()


def previous_signs_until(endpoint: WebhookEndpoint, now: datetime | None = None) -> datetime | None:
    """Until when the previous secret signs beside the current one; None when it no longer does."""
    until = endpoint.previous_secret_until
    if endpoint.previous_secret_encrypted and until and (now or utcnow()) < until:
        return until
    return None


def signing_secrets(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    """The current secret, then the previous one while it still signs."""
    keys = [secret_of(endpoint)]
    if endpoint.previous_secret_encrypted and previous_signs_until(endpoint, now):
        keys.append(crypto.decrypt(endpoint.previous_secret_encrypted))
    return keys


def signature_header(keys: list[str], body: bytes, timestamp: int) -> str:
    """`t=<unix>,v1=<hex HMAC-SHA256(key, "<t>.<body>")>`, one `v1` per key."""
    signed = str(timestamp).encode() + b"." + body
    signatures = [hmac.new(key.encode(), signed, hashlib.sha256).hexdigest() for key in keys]
    return ",".join([f"t={timestamp}", *(f"v1={signature}" for signature in signatures)])


def signed_headers(keys: list[str], event_id: str, body: bytes, timestamp: int) -> dict[str, str]:
    """Both signatures of a body: `Portal-Signature` with every key, and the Standard Webhooks
    headers, `v1,<base64 HMAC-SHA256(key, "<id>.<t>.<body>")>` with each key of the standard
    form (a secret of the old form signs `Portal-Signature` alone while it still signs)."""
    signed = f"{event_id}.{timestamp}.".encode() + body
    standard = [
        "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        for key in filter(None, map(standard_key, keys))
    ]
    headers = {
        SIGNATURE_HEADER: signature_header(keys, body, timestamp),
        ID_HEADER: event_id,
        TIMESTAMP_HEADER: str(timestamp),
    }
    if standard:
        headers[STANDARD_SIGNATURE_HEADER] = " ".join(standard)
    return headers


def masked(headers: dict[str, str]) -> dict[str, str]:
    """The headers as the delivery log keeps them: each signature masked, its version kept."""
    shown = dict(headers)
    if SIGNATURE_HEADER in shown:
        shown[SIGNATURE_HEADER] = ",".join(
            part if part.startswith("t=") else part.split("=", 1)[0] + "=" + MASK
            for part in shown[SIGNATURE_HEADER].split(",")
        )
    if STANDARD_SIGNATURE_HEADER in shown:
        shown[STANDARD_SIGNATURE_HEADER] = " ".join(
            part.split(",", 1)[0] + "," + MASK for part in shown[STANDARD_SIGNATURE_HEADER].split()
        )
    return shown


def payload(event: Event) -> bytes:
    """The raw body: the bytes that are signed are the bytes sent. An operation's event has
    the API's record in `data` and the portal's reading of its money in `portal`
    (`events.with_money`)."""
    record, money = split_money(event.data)
    document = {
        "id": event.public_id,
        "type": event.type,
        "created_at": iso_utc(event.created_at),
        "data": record,
    }
    if event.type.startswith("operation."):
        document["portal"] = money
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


# --- Fan-out: events become deliveries, once ----------------------------------------------------


def _fan_out(endpoint: WebhookEndpoint) -> int:
    """Make the deliveries of the endpoint's new events in its types; how many.

    No cursor to race on: an event has a delivery or not, and the unique pair (endpoint, event)
    refuses a second one; a worker that loses that race rolls back and finds it made next tick.
    Only the retry window is looked at, which bounds the scan.
    """
    if not endpoint.event_types:
        return 0
    window = utcnow() - timedelta(seconds=setting("WEBHOOK_RETRY_SECONDS"))
    delivered = sa.select(WebhookDelivery.id).where(
        WebhookDelivery.endpoint_id == endpoint.id, WebhookDelivery.event_id == Event.id
    )
    new = db.session.execute(
        sa.select(Event.id, Event.operation_id)
        .where(
            Event.merchant_id == endpoint.merchant_id,
            Event.id > endpoint.since_event_id,
            Event.notify.is_(True),
            of_current_connection(),  # a connection of the past is no news to the shop
            Event.type.in_(endpoint.event_types),
            Event.created_at >= window,
            ~sa.exists(delivered),
        )
        .order_by(Event.id)
    ).all()
    for event_id, operation_id in new:
        db.session.add(
            WebhookDelivery(endpoint_id=endpoint.id, event_id=event_id, operation_id=operation_id)
        )
    return len(new)


def fan_out() -> int:
    """Deliveries for every enabled endpoint's new events; how many were made."""
    made = 0
    endpoints = db.session.scalars(sa.select(WebhookEndpoint.id).where(WebhookEndpoint.enabled))
    for endpoint_id in list(endpoints):
        endpoint = db.session.get(WebhookEndpoint, endpoint_id)
        if endpoint is None:
            continue
        try:
            made += _fan_out(endpoint)
            db.session.commit()
        except IntegrityError:  # another worker made them meanwhile
            db.session.rollback()
        except Exception as error:  # one endpoint's failure stops it alone
            db.session.rollback()
            log.error(
                "Webhook events of endpoint %s not fanned out: %s",
                endpoint_id,
                type(error).__name__,
            )
    return made


# --- Sending ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one POST came to."""

    status: int | None
    error: str | None
    duration_ms: int
    request_headers: dict[str, str] | None = None  # signatures masked
    request_body: str | None = None
    response_body: str | None = None  # its first `LOGGED_ANSWER_BYTES`

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def _claim(delivery_id: int, owner: str, now: datetime) -> bool:
    """Take the delivery's lease: one conditional UPDATE, so exactly one worker wins it, and
    only while its endpoint is on (switched off during a turn, it gets no further POST)."""
    lease = now + timedelta(seconds=setting("WEBHOOK_LEASE_SECONDS"))
    switched_on = sa.exists().where(
        WebhookEndpoint.id == WebhookDelivery.endpoint_id, WebhookEndpoint.enabled.is_(True)
    )
    claimed = rows_changed(
        sa.update(WebhookDelivery)
        .where(
            WebhookDelivery.id == delivery_id,
            WebhookDelivery.state == DeliveryState.PENDING,
            WebhookDelivery.next_attempt_at <= now,
            sa.or_(WebhookDelivery.lease_until.is_(None), WebhookDelivery.lease_until < now),
            switched_on,
        )
        .values(lease_owner=owner, lease_until=lease)
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    return claimed == 1


def _post(endpoint: WebhookEndpoint, event: Event) -> Outcome:
    """One signed POST, timed; any answer but 2xx, and no answer, is a failed attempt.

    The address is checked again first and the POST goes to the addresses checked, for the URL
    as it is dialled (an endpoint saved before the portal stored that form has its own). The
    timeout is the whole POST's (connecting, sending, the answer); a redirect is an answer, not
    followed.
    """
    started = time.monotonic()
    url = dialled_url(endpoint.url) or endpoint.url  # None only for a URL the check refuses
    problem, addresses = checked_addresses(url)
    if problem is not None:
        return Outcome(None, f"Not sent: {problem.value}", 0)
    body = payload(event)
    now = utcnow()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Accept-Encoding": "identity",  # the answer is logged as it came: nothing to decompress
        **signed_headers(
            signing_secrets(endpoint, now), event.public_id, body, int(now.timestamp())
        ),
    }
    timeout = setting("WEBHOOK_TIMEOUT_SECONDS")
    answer_start = None
    try:
        with (
            within(timeout),
            pinned_to(urlsplit(url).hostname or "", addresses),
            _session().post(
                url,
                data=body,
                headers=headers,
                timeout=(timeout, timeout),
                allow_redirects=False,
                stream=True,
            ) as answer,
        ):
            status, error = answer.status_code, None
            answer_start = _answer_start(answer)
    except (requests.Timeout, DeadlinePassed):
        status, error = None, f"No answer within {timeout:g} s"
    except requests.RequestException as failure:
        status, error = None, _error_text(failure)
    duration = round((time.monotonic() - started) * 1000)
    return Outcome(status, error, duration, masked(headers), body.decode(), answer_start)


def _answer_start(answer: requests.Response) -> str:
    """The first `LOGGED_ANSWER_BYTES` of the shop's answer, for the log. The answer is read on
    up to `MAX_ANSWER_BYTES` (its connection is then kept), no further: a longer one is left
    unread and its connection closed."""
    length = answer.headers.get("Content-Length", "")
    too_long = length.strip().isdigit() and int(length) > MAX_ANSWER_BYTES
    kept, read = b"", 0
    for chunk in answer.iter_content(ANSWER_CHUNK):
        kept += chunk[: LOGGED_ANSWER_BYTES - len(kept)]
        read += len(chunk)
        if read > MAX_ANSWER_BYTES or (too_long and len(kept) >= LOGGED_ANSWER_BYTES):
            break
    return kept.decode(errors="replace")


def _session() -> requests.Session:
    """One pool of connections per application in each process: a shop that keeps connections
    alive is not dialled again for each event. No retries: a failed POST is a failed attempt."""
    extensions = current_app.extensions
    if SESSION_EXTENSION not in extensions:
        session = PortalSession()
        adapter = WatchedAdapter(pool_maxsize=POOL_SIZE, max_retries=0)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        extensions.setdefault(SESSION_EXTENSION, session)
    return extensions[SESSION_EXTENSION]


def _error_text(failure: requests.RequestException) -> str:
    if isinstance(failure, requests.ConnectionError):
        return "Connection failed"
    return type(failure).__name__[:MAX_ERROR]


def _next_attempt(delivery: WebhookDelivery, now: datetime) -> datetime | None:
    """When to try again after a failed attempt: 30 s, 1 min, 2 min … up to the cap; None once
    the retry window from the first attempt is over."""
    assert delivery.first_attempt_at is not None
    if now - delivery.first_attempt_at >= timedelta(seconds=setting("WEBHOOK_RETRY_SECONDS")):
        return None
    delay = setting("WEBHOOK_BACKOFF_SECONDS") * 2 ** max(0, delivery.attempts - 1)
    return now + timedelta(seconds=min(delay, setting("WEBHOOK_BACKOFF_CAP_SECONDS")))


def _send(delivery_id: int, owner: str) -> bool:
    """Send a delivery this worker has claimed, record the attempt and release the lease;
    whether the shop took it. Anything that stops the POST itself (a secret that no key
    decrypts, a body that cannot be made) is a failed attempt like a shop's refusal: the log
    shows it, the delivery is retried, and the other deliveries go on."""
    delivery = db.session.get(WebhookDelivery, delivery_id)
    assert delivery is not None
    try:
        outcome = _post(delivery.endpoint, delivery.event)
    except Exception as error:  # recorded on this delivery alone
        db.session.rollback()
        log.error("Webhook delivery %s not sent: %s", delivery_id, type(error).__name__)
        delivery = db.session.get(WebhookDelivery, delivery_id)
        assert delivery is not None
        outcome = Outcome(None, f"Not sent: {type(error).__name__}"[:MAX_ERROR], 0)
    now = utcnow()
    db.session.add(
        WebhookAttempt(
            delivery_id=delivery.id,
            started_at=now - timedelta(milliseconds=outcome.duration_ms),
            status=outcome.status,
            error=outcome.error,
            duration_ms=outcome.duration_ms,
            manual=delivery.manual,
            request_headers=outcome.request_headers,
            request_body=outcome.request_body,
            response_body=outcome.response_body,
        )
    )
    delivery.attempts += 1
    delivery.first_attempt_at = delivery.first_attempt_at or now
    delivery.last_status = outcome.status
    delivery.manual = False
    delivery.lease_owner = delivery.lease_until = None
    if outcome.delivered:
        delivery.state = DeliveryState.DELIVERED
    else:
        retry_at = _next_attempt(delivery, now)
        delivery.state = DeliveryState.PENDING if retry_at else DeliveryState.FAILED
        delivery.next_attempt_at = retry_at or now
    if outcome.status == GONE:
        _switch_off_gone(delivery.endpoint)
    db.session.commit()
    return outcome.delivered


def _switch_off_gone(endpoint: WebhookEndpoint) -> None:
    """The shop said 410 Gone: no more POSTs to the endpoint until an owner switches it on again
    (its deliveries wait, as those of an endpoint switched off by hand); the owners are
    mailed. The caller commits."""
    endpoint.enabled = False
    outbox.queue_to_owners(
        endpoint.merchant_id,
        "A webhook endpoint was switched off",
        f"The webhook endpoint {endpoint.url} answered 410 Gone, so the portal stopped sending "
        "it events. Its deliveries wait; switch it on again in Settings → Notifications once "
        f"it takes webhooks:\n{outbox.portal_link('/settings/notifications')}\n",
    )


def forget_old_log() -> int:
    """Drop what the delivery log keeps only `LOG_DAYS`: the attempts (with what they sent and
    got back), the deliveries finished and last due before then, and the replays done before
    then; how many rows. A delivery is the log of one event to one endpoint: kept, one row per
    event and endpoint would grow with the merchant's history for ever, although no page shows
    it and no replay reaches that far back. Pending deliveries stay, however old, and so does
    every delivery of the retry window: the fan-out looks there for events without one, and
    would send a forgotten one again."""
    now = utcnow()
    cutoff = now - timedelta(days=LOG_DAYS)
    fanned_out_since = now - timedelta(seconds=setting("WEBHOOK_RETRY_SECONDS"))
    dropped = rows_changed(sa.delete(WebhookAttempt).where(WebhookAttempt.started_at < cutoff))
    dropped += rows_changed(
        sa.delete(WebhookDelivery).where(
            WebhookDelivery.state.in_((DeliveryState.DELIVERED, DeliveryState.FAILED)),
            WebhookDelivery.next_attempt_at < min(cutoff, fanned_out_since),
        )
    )
    dropped += rows_changed(sa.delete(WebhookReplay).where(WebhookReplay.done_at < cutoff))
    db.session.commit()
    return dropped


def _is_due(now: datetime) -> sa.ColumnElement[bool]:
    """A delivery to send now: pending, its time come, no live lease, its endpoint on (webhooks
    turned off keep their pending deliveries until they are turned on again), and no earlier
    event of its operation still pending (a failed one no longer holds the later ones back)."""
    earlier = aliased(WebhookDelivery)
    waiting = sa.select(earlier.id).where(
        earlier.endpoint_id == WebhookDelivery.endpoint_id,
        earlier.operation_id == WebhookDelivery.operation_id,
        earlier.event_id < WebhookDelivery.event_id,
        earlier.state == DeliveryState.PENDING,
    )
    return sa.and_(
        WebhookEndpoint.enabled,
        WebhookDelivery.state == DeliveryState.PENDING,
        WebhookDelivery.next_attempt_at <= now,
        sa.or_(WebhookDelivery.lease_until.is_(None), WebhookDelivery.lease_until < now),
        ~sa.exists(waiting),
    )


def _due(now: datetime, endpoint_id: int) -> list[int]:
    """The endpoint's deliveries due now, oldest event first."""
    return list(
        db.session.scalars(
            sa.select(WebhookDelivery.id)
            .join(WebhookEndpoint)
            .where(WebhookDelivery.endpoint_id == endpoint_id, _is_due(now))
            .order_by(WebhookDelivery.event_id)
            .limit(BATCH)
        )
    )


def _endpoints_due(now: datetime) -> list[int]:
    """The endpoints with a delivery due now, those this process served longest ago first: a
    pass that ran out of time before some endpoints starts the next one with them."""
    endpoint_ids = db.session.scalars(
        sa.select(WebhookDelivery.endpoint_id).join(WebhookEndpoint).where(_is_due(now)).distinct()
    ).all()
    db.session.rollback()  # no transaction held open while the shops answer
    return sorted(
        endpoint_ids, key=lambda endpoint: (_served_at.get(_endpoint_key(endpoint), 0.0), endpoint)
    )


def _endpoint_key(endpoint_id: int) -> tuple[str, int]:
    """An endpoint among every portal this process serves: its database and its id."""
    return str(db.engine.url), endpoint_id


def deliver_due(budget_seconds: float | None = None, *, wait: bool = True) -> int:
    """Fan out new events, then send every delivery whose time has come, until none is due or
    the budget (default: the tick's interval) is spent; how many the shops took.

    Each endpoint is served by its own turn on this process's delivery threads
    (`ENDPOINTS_AT_ONCE`), with its own database session: a shop that answers slowly, or not
    at all, holds its own turn and no other merchant's. An endpoint whose turn is under way
    (from an earlier pass) is left to it. The worker does not `wait`: its task returns at
    once, and its threads stay free for the mirror and the mail.
    """
    rotate_legacy_secrets()
    fan_out()
    run_replays()
    interval = float(current_app.config["SYNC_SECONDS"])
    deadline = time.monotonic() + (interval if budget_seconds is None else budget_seconds)
    app = current_app._get_current_object()  # type: ignore[attr-defined]

    def turn(endpoint_id: int, key: tuple[str, int]) -> int:
        try:
            with app.app_context():
                return _deliver_to(endpoint_id, deadline)
        finally:
            with _turns_lock:
                _turns.discard(key)

    turns = []
    for endpoint_id in _endpoints_due(utcnow()):
        key = _endpoint_key(endpoint_id)
        with _turns_lock:
            if key in _turns:
                continue
            _turns.add(key)
        turns.append(_delivery_threads().submit(turn, endpoint_id, key))
    if wait:
        return sum(done.result() for done in turns)
    for done in turns:
        done.add_done_callback(_log_an_escaped_failure)
    return 0


def _log_an_escaped_failure(turn: Future[int]) -> None:
    """Log a turn's failure that escaped its own handling (the rollback after a failure fails
    too, the database being down): nobody reads a turn the worker did not wait for. Only its
    class, as a database error's text may quote the values it was given."""
    error = None if turn.cancelled() else turn.exception()
    if error is not None:
        log.error("A webhook delivery turn failed: %s", type(error).__name__)


def _delivery_threads() -> ThreadPoolExecutor:
    """This process's delivery threads, made at the first pass."""
    with _turns_lock:
        if not _threads:
            _threads.append(ThreadPoolExecutor(ENDPOINTS_AT_ONCE, thread_name_prefix="webhooks"))
        return _threads[0]


def _deliver_to(endpoint_id: int, deadline: float) -> int:
    """Send one endpoint's due deliveries, each claimed just before its POST (so a lease never
    waits behind other sends), until none is due, the deadline passes or one fails: a shop
    that fails an attempt gets no other one in this pass, so a shop that does not answer costs
    one timeout per pass. Any other failure is logged and ends this endpoint's turn only. How
    many the shop took."""
    if time.monotonic() >= deadline:
        return 0  # its turn came too late: served first in the next pass
    _served_at[_endpoint_key(endpoint_id)] = time.monotonic()
    owner = uuid.uuid4().hex
    delivered = 0
    try:
        while due := _due(utcnow(), endpoint_id):
            claimed = False
            for delivery_id in due:
                if time.monotonic() >= deadline or shutdown.requested():
                    return delivered
                if not _claim(delivery_id, owner, utcnow()):
                    continue
                claimed = True
                if not _send(delivery_id, owner):
                    return delivered
                delivered += 1
            if not claimed:  # other workers hold them
                break
    except Exception as error:  # one endpoint's failure stops it alone
        db.session.rollback()
        log.error(
            "Webhook deliveries of endpoint %s stopped: %s", endpoint_id, type(error).__name__
        )
    return delivered


# --- What a person asks for on the settings page ---------------------------------------------


class TooManySends(Exception):
    """More test events and resends to one endpoint than `PORTAL_WEBHOOK_MANUAL_LIMIT` allows:
    nothing was queued."""


def send_test_event(endpoint: WebhookEndpoint) -> WebhookDelivery:
    """Queue a `test` event for this endpoint only (never mailed: `notify` is false), of the
    merchant's current connection as every event is (its key begins with the generation). The
    worker sends it as any delivery, under a lease, so it goes once; the owner's request never
    waits for the shop. Raises `TooManySends` past the endpoint's limit."""
    _count_manual_send(endpoint)
    now = utcnow()
    public_id = public_event_id()
    generation = current_generation(endpoint.merchant_id)
    event = Event(
        public_id=public_id,
        merchant_id=endpoint.merchant_id,
        connection_generation=generation,
        type=TEST_TYPE,
        dedup_key=stored_key(generation, f"test:{public_id}"),
        data={"message": "A test event from the merchant portal.", "sent_at": iso_utc(now)},
        notify=False,
        occurred_at=now,
    )
    db.session.add(event)
    db.session.flush()
    delivery = WebhookDelivery(
        endpoint_id=endpoint.id, event_id=event.id, manual=True, next_attempt_at=now
    )
    db.session.add(delivery)
    db.session.commit()
    _wake_the_worker()
    return delivery


def resend(delivery: WebhookDelivery) -> bool:
    """Queue another attempt of the same event (same id) for the worker; a failure retries for
    the window again. False when a worker holds the delivery at this moment (it is being sent).
    Raises `TooManySends` past the endpoint's limit."""
    _count_manual_send(delivery.endpoint)
    now = utcnow()
    queued = rows_changed(
        sa.update(WebhookDelivery)
        .where(
            WebhookDelivery.id == delivery.id,
            sa.or_(WebhookDelivery.lease_until.is_(None), WebhookDelivery.lease_until < now),
        )
        .values(
            state=DeliveryState.PENDING,
            next_attempt_at=now,
            first_attempt_at=None,
            manual=True,
        )
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    if queued:
        _wake_the_worker()
    return queued == 1


def _count_manual_send(endpoint: WebhookEndpoint, setting: str = "WEBHOOK_MANUAL_LIMIT") -> None:
    """Count a test event, a resend or a replay against the endpoint's limit (`setting`), in
    the limiter's store (shared by every process): an owner's clicks must not make the portal
    hammer a host."""
    limit = attempts.limit(current_app.config[setting], f"webhooks.{setting}", str(endpoint.id))
    if attempts.attempt([limit]) is None:
        raise TooManySends


def ask_replay(endpoint: WebhookEndpoint, start: datetime, end: datetime) -> WebhookReplay:
    """Queue, for the worker, a replay of the events written from `start` to before `end`,
    cut to the last `LOG_DAYS` (what a shop may ask for again). Raises `TooManySends` past the
    endpoint's `PORTAL_WEBHOOK_REPLAY_LIMIT`."""
    _count_manual_send(endpoint, "WEBHOOK_REPLAY_LIMIT")
    now = utcnow()
    replay = WebhookReplay(
        endpoint_id=endpoint.id,
        period_start=max(start, now - timedelta(days=LOG_DAYS)),
        period_end=min(end, now),
        requested_at=now,
    )
    db.session.add(replay)
    db.session.commit()
    _wake_the_worker()
    return replay


def run_replays() -> int:
    """Carry out each replay asked for, once (taken by one conditional UPDATE); how many events
    were queued again. A replay sends the period's events that were notified, of the types the
    endpoint has now and of the current connection, under their own ids: an event's delivery
    is due again (or made, for an event the endpoint had not been sent), unless a worker holds
    it at this moment (it is being sent)."""
    queued = 0
    now = utcnow()
    waiting = WebhookReplay.done_at.is_(None)
    for replay in _each_taken(WebhookReplay, waiting, {"done_at": now}):
        replay.events = _replay(replay, now)
        db.session.commit()
        queued += replay.events
    return queued


def _replay(replay: WebhookReplay, now: datetime) -> int:
    endpoint = db.session.get(WebhookEndpoint, replay.endpoint_id)
    assert endpoint is not None
    found = db.session.execute(
        sa.select(Event.id, Event.operation_id, WebhookDelivery)
        .outerjoin(
            WebhookDelivery,
            sa.and_(
                WebhookDelivery.event_id == Event.id,
                WebhookDelivery.endpoint_id == endpoint.id,
            ),
        )
        .where(
            Event.merchant_id == endpoint.merchant_id,
            Event.notify.is_(True),
            of_current_connection(),
            Event.type.in_(endpoint.event_types),
            Event.created_at >= replay.period_start,
            Event.created_at < replay.period_end,
        )
        .order_by(Event.id)
    ).all()
    queued = 0
    for event_id, operation_id, delivery in found:
        if delivery is None:
            delivery = WebhookDelivery(
                endpoint_id=endpoint.id, event_id=event_id, operation_id=operation_id
            )
            db.session.add(delivery)
        elif delivery.lease_until is not None and delivery.lease_until > now:
            continue
        delivery.state = DeliveryState.PENDING
        delivery.next_attempt_at = now
        delivery.first_attempt_at = None
        delivery.manual = True
        queued += 1
    return queued


def _wake_the_worker() -> None:
    """Have the worker deliver now rather than at its next tick, through the hook its queue
    registers (`WAKE_EXTENSION`; the rules know no queue). Without one, or when the queue
    cannot be reached, the next tick sends it all the same."""
    wake = current_app.extensions.get(WAKE_EXTENSION)
    if wake is None:
        return
    try:
        wake()
    except Exception as error:  # the delivery is due in the database anyway
        log.warning("The worker was not woken (%s): its next tick delivers", type(error).__name__)


def queued_by_hand(endpoint: WebhookEndpoint) -> list[WebhookDelivery]:
    """Test events and resends waiting for the worker, oldest first: the log shows them, and
    asks for itself again until they are sent."""
    return list(
        db.session.scalars(
            sa.select(WebhookDelivery)
            .where(
                WebhookDelivery.endpoint_id == endpoint.id,
                WebhookDelivery.manual.is_(True),
                WebhookDelivery.state == DeliveryState.PENDING,
            )
            .order_by(WebhookDelivery.id)
            .options(sa.orm.joinedload(WebhookDelivery.event))
        )
    )


def delivery_of(merchant: Merchant, delivery_id: int) -> WebhookDelivery | None:
    """A delivery of the merchant's endpoint; None for anyone else's."""
    return db.session.scalar(
        sa.select(WebhookDelivery)
        .join(WebhookEndpoint)
        .where(WebhookDelivery.id == delivery_id, WebhookEndpoint.merchant_id == merchant.id)
    )


def attempts_of(endpoint: WebhookEndpoint) -> sa.Select:
    """The endpoint's delivery log: every attempt, newest first."""
    return (
        sa.select(WebhookAttempt)
        .join(WebhookDelivery)
        .where(WebhookDelivery.endpoint_id == endpoint.id)
        .order_by(WebhookAttempt.id.desc())
        .options(sa.orm.joinedload(WebhookAttempt.delivery).joinedload(WebhookDelivery.event))
    )

"""E-mail to people: each user's choice of events, the outbox, and sending it over SMTP.

Every mail goes through the outbox (`MailMessage`), sent by the worker's tick (`send_due`): a
request never waits on the SMTP server, a mail the server refuses is tried again with backoff
for a day, and a message is claimed with a conditional UPDATE before it is sent, so several
workers send it once. Events reach the outbox the same way: each tick turns the events after a
merchant's cursor into one message per event and user who chose its type; moving the cursor is
itself conditional, so two workers never queue an event twice. An id is taken when an event is
written, not when it commits, so an event can land below the cursor: each tick also looks back
`LATE_WINDOW` for events whose mail is missing, and the unique (event, user) pair of the outbox
keeps that pass from queueing a message twice.

E-mail is off while `PORTAL_SMTP_URL` is empty: nothing is queued then.
"""

from __future__ import annotations

import contextlib
import logging
import mimetypes
import secrets
import smtplib
import socket
import ssl
from collections.abc import Callable, Container, Iterable, Iterator
from datetime import timedelta
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from urllib.parse import unquote, urlsplit

import sqlalchemy as sa
from flask import current_app
from sqlalchemy.exc import IntegrityError

from portal.api.deadline import connect_timeout, watch, within
from portal.database import utcnow
from portal.extensions import db, rows_changed
from portal.identity.models import Merchant, Role, User
from portal.identity.rules import one_time_links
from portal.identity.rules.accounts import looks_like_email
from portal.live.models import Event, MailChoice, MailCursor, MailMessage, MailState
from portal.live.rules.event_words import describe, one_line
from portal.live.rules.events import EventType, of_current_connection
from portal.live.rules.outbox import enabled, portal_link, queue

logger = logging.getLogger(__name__)

# Money that arrived wrong waits for a person: whoever decides hears of it unless they choose
# otherwise. Owners hear of confirmations too; accountants of nothing.
NEEDS_A_PERSON = frozenset(
    {
        EventType.TRANSACTION_NEEDS_REVIEW,
        EventType.OPERATION_UNDERPAID,
        EventType.OPERATION_OVERPAID,
        EventType.OPERATION_PAID_LATE,
    }
)
ROLE_DEFAULTS = {
    Role.OWNER: NEEDS_A_PERSON | {EventType.OPERATION_CONFIRMED},
    Role.OPERATOR: NEEDS_A_PERSON,
}
GIVE_UP_AFTER = timedelta(days=1)
MAX_RETRY = timedelta(hours=1)
# How long a message sent or given up is kept (its body is dropped at once): the rows of the
# last days answer "was it sent?"; older ones are forgotten by the hourly housekeeping.
KEPT_DAYS = 30
EVENTS_PER_TICK = 500
# How far back the tick looks for events that committed below the cursor (a lower id committed
# after a higher one). A sync commits a page's events within its lease (`mirror.LEASE`, 3
# minutes) of writing them, and an owner's test event or a refund's at once: an event that
# committed late is that recent, and the scan stays this short.
LATE_WINDOW = timedelta(minutes=10)
# A user the merchant's events may mail, with the event types they chose.
Recipient = tuple[User, frozenset[EventType]]
MESSAGES_PER_TICK = 200


# --- Choices ---------------------------------------------------------------------------------


def choices_of(user: User) -> frozenset[EventType]:
    """The event types that mail `user`: their own choice, else their role's default."""
    choice = db.session.get(MailChoice, user.id)
    if choice is not None:
        known = {member.value: member for member in EventType}
        return frozenset(known[name] for name in choice.event_types if name in known)
    return ROLE_DEFAULTS.get(user.role, frozenset())


def choose(user: User, types: Iterable[EventType]) -> None:
    """Mail `user` about these event types from now on (and about nothing else)."""
    names = sorted({EventType(name).value for name in types})
    choice = db.session.get(MailChoice, user.id)
    if choice is None:
        db.session.add(MailChoice(user_id=user.id, event_types=names))
    else:
        choice.event_types = names
    db.session.commit()


# --- The outbox ------------------------------------------------------------------------------


def send_due() -> None:
    """Queue the mail of new events and of reset requests, then send every message that is due.
    Called each tick. A failure while queueing one merchant's mail (a record its message cannot
    hold) is logged, its cursor stays (the next tick tries again), and the others' mail goes on."""
    if not enabled():
        return
    for merchant_id in db.session.scalars(sa.select(Merchant.id)).all():
        isolated(_queue_events, merchant_id, doing="queueing the mail of merchant")
    isolated(one_time_links.answer_reset_requests, doing="answering reset requests")
    _send_queued()


def isolated(step: Callable[..., None], *args: int, doing: str) -> None:
    """Run one step of the tick; an exception is logged by its class (no message: it may quote
    an address or a link) and rolled back, and the tick goes on."""
    try:
        step(*args)
    except Exception as error:  # one failure must not stop everyone's mail
        db.session.rollback()
        logger.error("Failed %s %s: %s", doing, " ".join(map(str, args)), type(error).__name__)


def _queue_events(merchant_id: int) -> None:
    """Queue the mail of the merchant's events past its cursor, then of those that committed
    below it late."""
    recipients = _recipients(merchant_id)
    cursor = _queue_after_cursor(merchant_id, recipients)
    try:
        _queue_late(merchant_id, cursor, recipients)
        db.session.commit()
    except IntegrityError:
        db.session.rollback()  # another worker queued them meanwhile: the next tick sees it


def _queue_after_cursor(merchant_id: int, recipients: list[Recipient]) -> int:
    """Move the merchant's cursor past its next events and queue their messages, in one
    transaction; where the cursor stands then. The UPDATE is conditional on where the cursor
    was read, so only one worker's matches (PostgreSQL makes the other wait for the first's
    commit, then matches nothing)."""
    start = _cursor(merchant_id)
    events = db.session.scalars(
        sa.select(Event)
        .where(Event.merchant_id == merchant_id, Event.id > start, of_current_connection())
        .order_by(Event.id)
        .limit(EVENTS_PER_TICK)
    ).all()
    if not events:
        return start
    moved = rows_changed(
        sa.update(MailCursor)
        .where(MailCursor.merchant_id == merchant_id, MailCursor.last_event_id == start)
        .values(last_event_id=events[-1].id)
    )
    if moved != 1:
        db.session.rollback()  # another worker queued these events meanwhile
        return start
    _queue_mail(events, recipients)
    db.session.commit()
    return events[-1].id


def _queue_late(merchant_id: int, cursor: int, recipients: list[Recipient]) -> None:
    """Queue the missing messages of the events at or below the cursor written in the last
    `LATE_WINDOW`: a transaction that took lower ids than an event mailed already and committed
    after it. The caller commits; a worker that queued one meanwhile makes the commit fail.
    Users whose address cannot be mailed are left out (the cursor pass logs it), else their
    events would be looked at again each tick."""
    recipients = [(user, chosen) for user, chosen in recipients if looks_like_email(user.email)]
    if not recipients:
        return
    late = sa.select(Event).where(
        Event.merchant_id == merchant_id,
        Event.id <= cursor,
        Event.created_at >= utcnow() - LATE_WINDOW,
        Event.notify.is_(True),
        of_current_connection(),
        Event.type.in_({kind for _, chosen in recipients for kind in chosen}),
    )
    events = db.session.scalars(late.order_by(Event.id)).all()
    if not events:
        return
    queued = db.session.execute(
        sa.select(MailMessage.event_id, MailMessage.user_id).where(
            MailMessage.event_id.in_(late.with_only_columns(Event.id))
        )
    ).all()
    _queue_mail(events, recipients, queued=set(queued))


def _queue_mail(
    events: Iterable[Event],
    recipients: list[Recipient],
    *,
    queued: Container[tuple[int | None, int | None]] = frozenset(),
) -> None:
    """One message per event and user who chose its type, but for the (event, user) pairs
    `queued` already; nothing for an event nobody is told of or given up on."""
    too_old = utcnow() - GIVE_UP_AFTER
    for event in events:
        chosen_by = [
            user
            for user, chosen in recipients
            if event.type in chosen and (event.id, user.id) not in queued
        ]
        if not event.notify or event.created_at < too_old or not chosen_by:
            continue
        subject, body = describe(event, portal_link)
        for user in chosen_by:
            queue(user.email, subject, body, user_id=user.id, event_id=event.id)


def _cursor(merchant_id: int) -> int:
    """Where the merchant's cursor stands; a new merchant's starts at 0 (the first sync's
    events from history have `notify` false)."""
    cursor = db.session.get(MailCursor, merchant_id)
    if cursor is not None:
        return cursor.last_event_id
    try:
        db.session.add(MailCursor(merchant_id=merchant_id, last_event_id=0))
        db.session.commit()
    except IntegrityError:
        db.session.rollback()  # another worker made it meanwhile
    return 0


def _recipients(merchant_id: int) -> list[Recipient]:
    users = db.session.scalars(sa.select(User).where(User.merchant_id == merchant_id)).all()
    return [(user, chosen) for user in users if (chosen := choices_of(user))]


def _send_queued() -> None:
    """Send due messages one by one, each claimed first; stop at the first SMTP failure (the
    others wait for the next tick rather than hammer a server that is down)."""
    with _Connection() as connection:
        for _ in range(MESSAGES_PER_TICK):
            message = _claim_next()
            if message is None:
                return
            if not looks_like_email(message.to_address):
                # Queued before the outbox checked addresses: a list would mail its link to all.
                logger.warning("Mail %s not sent: not one email address.", message.id)
                _finish(message, MailState.FAILED)
                continue
            try:
                connection.send(_email(message))
            except (OSError, smtplib.SMTPException) as error:
                _retry_later(message, error)
                connection.close()
                return
            _finish(message, MailState.SENT)


def _claim_next() -> MailMessage | None:
    """The next due message, leased to this worker (for `PORTAL_MAIL_LEASE_SECONDS`, which
    outlives a send: portal/config.py checks it): only one worker's UPDATE matches."""
    now = utcnow()
    lease = timedelta(seconds=float(current_app.config["MAIL_LEASE_SECONDS"]))
    due = (
        (MailMessage.state == MailState.QUEUED)
        & (MailMessage.next_attempt_at <= now)
        & ((MailMessage.lease_until.is_(None)) | (MailMessage.lease_until < now))
    )
    for message_id in db.session.scalars(
        sa.select(MailMessage.id).where(due).order_by(MailMessage.id).limit(20)
    ).all():
        claimed = rows_changed(
            sa.update(MailMessage)
            .where(MailMessage.id == message_id, due)
            .values(lease_until=now + lease)
        )
        db.session.commit()
        if claimed == 1:
            return db.session.get(MailMessage, message_id)
    return None


def _finish(message: MailMessage, state: MailState) -> None:
    """Sent or given up: the body, the stop link (they may hold a one-time link) and the
    attachment go."""
    message.state = state
    message.body = None
    message.stop_url = None
    message.attachment = message.attachment_name = None
    message.lease_until = None
    if state == MailState.SENT:
        message.sent_at = utcnow()
    db.session.commit()


def forget_old() -> int:
    """Drop the messages sent or given up more than `KEPT_DAYS` ago; how many. Queued ones
    stay, and so does each merchant's cursor: no event is mailed twice."""
    cutoff = utcnow() - timedelta(days=KEPT_DAYS)
    dropped = rows_changed(
        sa.delete(MailMessage).where(
            MailMessage.state.in_((MailState.SENT, MailState.FAILED)),
            MailMessage.next_attempt_at < cutoff,
        )
    )
    db.session.commit()
    return dropped


def _retry_later(message: MailMessage, error: Exception) -> None:
    message.attempts += 1
    message.last_error = f"{type(error).__name__}: {error}"[:500]
    logger.warning("Mail %s not sent (attempt %s): %s", message.id, message.attempts, error)
    if utcnow() - message.created_at > GIVE_UP_AFTER:
        _finish(message, MailState.FAILED)
        return
    base = timedelta(seconds=float(current_app.config["MAIL_RETRY_SECONDS"]))
    message.next_attempt_at = utcnow() + min(base * 2 ** (message.attempts - 1), MAX_RETRY)
    message.lease_until = None
    db.session.commit()


def _email(message: MailMessage) -> EmailMessage:
    email = EmailMessage()
    sender = current_app.config["MAIL_FROM"]
    email["From"] = sender
    email["To"] = message.to_address
    # A subject may hold the API's words (an order number, a currency): a line break in a
    # header would add headers, or make no mail at all.
    email["Subject"] = one_line(message.subject)
    email["Date"] = formatdate(usegmt=True)
    email["Message-ID"] = make_msgid(idstring=secrets.token_hex(4), domain=_domain(sender))
    email["Auto-Submitted"] = "auto-generated"
    if message.stop_url:
        # RFC 8058: a mail program's own "unsubscribe" POSTs this to the link, no page shown.
        email["List-Unsubscribe"] = f"<{message.stop_url}>"
        email["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    email.set_content(message.body or "")
    if message.attachment is not None and message.attachment_name:
        maintype, _, subtype = _content_type(message.attachment_name).partition("/")
        email.add_attachment(
            message.attachment, maintype=maintype, subtype=subtype, filename=message.attachment_name
        )
    return email


def _content_type(file_name: str) -> str:
    return mimetypes.guess_type(file_name)[0] or "application/octet-stream"


def _domain(sender: str) -> str:
    return sender.rpartition("@")[2].rstrip(">").strip() or "localhost"


class _Connection:
    """One SMTP connection for a tick's messages, opened at the first one.

    `smtp://` upgrades with STARTTLS when the server offers it; `smtps://` speaks TLS from the
    start. Neither the URL nor its password is ever logged. `PORTAL_SMTP_TIMEOUT` bounds each
    message's whole dialogue (connecting, EHLO, STARTTLS and login for the first, then sending
    it) and the closing QUIT, however slowly the server answers: a deadline passed raises
    `DeadlinePassed`, an OSError, and the message is tried again later.
    """

    def __init__(self) -> None:
        self.smtp: smtplib.SMTP | None = None

    def __enter__(self) -> _Connection:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.smtp is not None:
            with contextlib.suppress(OSError, smtplib.SMTPException), self._dialogue():
                self.smtp.quit()
        self.close()

    def close(self) -> None:
        if self.smtp is not None:
            with contextlib.suppress(OSError):
                self.smtp.close()
        self.smtp = None

    def send(self, email: EmailMessage) -> None:
        with self._dialogue():
            if self.smtp is None:
                self.smtp = _connect(current_app.config["SMTP_URL"])
            self.smtp.send_message(email)

    @contextlib.contextmanager
    def _dialogue(self) -> Iterator[None]:
        """The block under the SMTP deadline, the open connection's socket watched by it (a new
        one is watched by `_WatchedSMTP` from the moment it connects)."""
        with within(float(current_app.config["SMTP_TIMEOUT"])):
            if self.smtp is not None and self.smtp.sock is not None:
                watch(self.smtp.sock)
            yield


class _WatchedSMTP(smtplib.SMTP):
    """smtplib's client with its socket under the current deadline from the moment it connects,
    before the greeting (and before TLS: a STARTTLS or SMTPS handshake is watched too)."""

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        # `_get_socket` is smtplib's own seam (SMTP_SSL overrides it too); the stubs omit it.
        sock: socket.socket = super()._get_socket(  # type: ignore[misc]
            host, port, connect_timeout(timeout)
        )
        watch(sock)
        return sock


class _WatchedSMTPS(smtplib.SMTP_SSL, _WatchedSMTP):
    """SMTPS: SMTP_SSL wraps the socket `_WatchedSMTP` made and watched."""


def _connect(url: str) -> smtplib.SMTP:
    parts = urlsplit(url)
    timeout = float(current_app.config["SMTP_TIMEOUT"])
    host = parts.hostname or "localhost"
    # A TLS context is made only for a connection that uses TLS: loading the system's trusted
    # certificates takes about 30 ms of CPU each time.
    smtp: smtplib.SMTP
    if parts.scheme == "smtps":
        smtp = _WatchedSMTPS(
            host, parts.port or 465, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        smtp = _WatchedSMTP(host, parts.port or 25, timeout=timeout)
        smtp.ehlo()
        if smtp.has_extn("starttls"):
            smtp.starttls(context=ssl.create_default_context())
            smtp.ehlo()
    if parts.username:
        smtp.login(unquote(parts.username), unquote(parts.password or ""))
    return smtp

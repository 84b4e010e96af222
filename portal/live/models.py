"""What happened and who was told: the mirror's state, events, webhook deliveries and mail."""

from __future__ import annotations

import enum
from datetime import date, datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column, relationship

from portal.database import UtcDateTime, enum_column, utcnow
from portal.extensions import Model


class MirrorState(Model):
    """Where a merchant's mirror stands, and which worker holds it.

    A worker syncs a merchant only while it holds the lease: one conditional UPDATE takes it
    (`lease_until` past or empty), so two workers, on one machine or several, never sync one
    merchant at once; a worker that died loses the lease when it runs out.
    """

    __tablename__ = "mirror_states"

    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), primary_key=True
    )
    # The newest `updated_at` the mirror has of each list; the next sync reads back to it
    # (minus an overlap), newest first.
    operations_watermark: Mapped[datetime | None] = mapped_column(UtcDateTime)
    transactions_watermark: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_sync_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # When the first sync of this connection finished: the attention list shows money that
    # arrived since (or in the last 30 days), not a new connection's whole history.
    first_sync_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # How many items wait on the attention list, counted by each sync and each decision
    # (`attention.recount`): the menu of every page reads it with the signed-in session.
    attention_count: Mapped[int] = mapped_column(default=0, server_default="0")
    last_full_sync_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    full_sync_requested_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_error: Mapped[str | None] = mapped_column(sa.Text)
    # Syncs failed in a row, and when the next may start: a failing merchant waits longer each
    # time, and its turn comes after the merchants whose syncs work.
    failures: Mapped[int] = mapped_column(default=0, server_default="0")
    retry_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    lease_owner: Mapped[str | None] = mapped_column(sa.String(64))
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime)


class Event(Model):
    """One change the mirror saw, written once; the source of webhooks, e-mail and timelines.

    `public_id` is the id a shop receives (the same on every retry). `dedup_key` names the
    change itself (the connection's generation, subject, what changed, to what), so a change
    seen twice is written once, and the same change of another account is another event.
    Events the first sync writes from history have `notify` false: nobody is told of the past.
    Readers see only the events of the merchant's current connection
    (`events.of_current_connection`).
    """

    __tablename__ = "events"
    __table_args__ = (
        sa.UniqueConstraint("merchant_id", "dedup_key"),
        sa.Index("ix_events_merchant_operation", "merchant_id", "operation_id"),
        sa.Index("ix_events_merchant_id", "merchant_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)  # the order events happened in
    public_id: Mapped[str] = mapped_column(sa.String(40), unique=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(sa.String(48))
    operation_id: Mapped[str | None] = mapped_column(sa.String(64))
    transaction_id: Mapped[str | None] = mapped_column(sa.String(64))
    dedup_key: Mapped[str] = mapped_column(sa.String(255))
    # The merchant's `ApiConnection.generation` when the event was seen (0: none).
    connection_generation: Mapped[int] = mapped_column(default=0, server_default="0")
    data: Mapped[dict] = mapped_column(sa.JSON)  # the API's record the event is about
    notify: Mapped[bool] = mapped_column(default=True)
    occurred_at: Mapped[datetime] = mapped_column(UtcDateTime)  # the API's `updated_at`
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


# --- Signed webhooks to the merchant's shop (portal/live/rules/webhooks.py)
# ------------------------


class WebhookEndpoint(Model):
    """Where a merchant's shop receives events, which types, and the secrets that sign them.

    A merchant has up to `webhooks.MAX_ENDPOINTS`. Secrets are stored encrypted
    (`portal.crypto`). After a rotation the previous secret signs too, beside the new one, until
    `previous_secret_until`. Only events with an id above `since_event_id` are sent: a shop is
    never told of what happened before it was set up. `legacy_secret`: a secret of the old form
    (URL-safe text), which the worker replaces (`webhooks.rotate_legacy_secrets`).
    """

    __tablename__ = "webhook_endpoints"
    __table_args__ = (sa.Index("ix_webhook_endpoints_merchant", "merchant_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(sa.String(2048))
    event_types: Mapped[list[str]] = mapped_column(sa.JSON)
    secret_encrypted: Mapped[str] = mapped_column(sa.Text)
    previous_secret_encrypted: Mapped[str | None] = mapped_column(sa.Text)
    previous_secret_until: Mapped[datetime | None] = mapped_column(UtcDateTime)
    enabled: Mapped[bool] = mapped_column(default=True)
    legacy_secret: Mapped[bool] = mapped_column(default=False, server_default=sa.false())
    since_event_id: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)


class DeliveryState(enum.StrEnum):
    """Where the delivery of one event to one endpoint stands."""

    PENDING = "pending"  # to send, or to send again after a failed attempt
    DELIVERED = "delivered"  # the shop answered 2xx
    FAILED = "failed"  # no 2xx in the retry window

    @property
    def label(self) -> str:
        return self.value.capitalize()


class WebhookDelivery(Model):
    """One event to one endpoint, made once (the unique pair) and sent until the shop takes it.

    A worker sends it only while it holds the lease, taken by one conditional UPDATE; a worker
    killed mid-send leaves the lease to run out, and the same event (same id) is sent again.
    `operation_id` is the event's, copied here so that the next due delivery of an operation is
    found without a join: a later event of an operation waits for the earlier ones.
    """

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        sa.UniqueConstraint("endpoint_id", "event_id"),
        sa.Index("ix_webhook_deliveries_due", "state", "next_attempt_at"),
        sa.Index("ix_webhook_deliveries_operation", "endpoint_id", "operation_id", "event_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    endpoint_id: Mapped[int] = mapped_column(
        sa.ForeignKey("webhook_endpoints.id", ondelete="CASCADE")
    )
    event_id: Mapped[int] = mapped_column(sa.ForeignKey("events.id", ondelete="CASCADE"))
    operation_id: Mapped[str | None] = mapped_column(sa.String(64))
    state: Mapped[DeliveryState] = mapped_column(
        enum_column(DeliveryState), default=DeliveryState.PENDING
    )
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    first_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    lease_owner: Mapped[str | None] = mapped_column(sa.String(64))
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # The next attempt was asked for by a person (Resend, Send test event).
    manual: Mapped[bool] = mapped_column(default=False)
    last_status: Mapped[int | None]
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    endpoint: Mapped[WebhookEndpoint] = relationship()
    event: Mapped[Event] = relationship()


class WebhookReplay(Model):
    """An owner's request to send an endpoint the events of a period again (with their ids),
    which one worker carries out once: `done_at` set, with how many `events` it queued."""

    __tablename__ = "webhook_replays"
    __table_args__ = (sa.Index("ix_webhook_replays_endpoint", "endpoint_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    endpoint_id: Mapped[int] = mapped_column(
        sa.ForeignKey("webhook_endpoints.id", ondelete="CASCADE")
    )
    period_start: Mapped[datetime] = mapped_column(UtcDateTime)
    period_end: Mapped[datetime] = mapped_column(UtcDateTime)
    requested_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    done_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    events: Mapped[int | None]


class WebhookAttempt(Model):
    """One POST of a delivery, as the delivery log shows it: what was sent (the signatures
    masked) and the start of the shop's answer, kept `webhooks.LOG_DAYS`."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (
        sa.Index("ix_webhook_attempts_delivery", "delivery_id"),
        sa.Index("ix_webhook_attempts_started", "started_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[int] = mapped_column(
        sa.ForeignKey("webhook_deliveries.id", ondelete="CASCADE")
    )
    started_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    status: Mapped[int | None]  # the shop's HTTP status; None when no answer came
    error: Mapped[str | None] = mapped_column(sa.String(255))
    duration_ms: Mapped[int]
    manual: Mapped[bool] = mapped_column(default=False)
    request_headers: Mapped[dict | None] = mapped_column(sa.JSON)
    request_body: Mapped[str | None] = mapped_column(sa.Text)
    response_body: Mapped[str | None] = mapped_column(sa.Text)

    delivery: Mapped[WebhookDelivery] = relationship()


# --- E-mail: each user's choices, the outbox, one-time links (portal/live/rules/mail.py) ----------


class MailChoice(Model):
    """The event types a user chose to be mailed about; no row means the role's default."""

    __tablename__ = "mail_choices"

    user_id: Mapped[int] = mapped_column(
        sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    event_types: Mapped[list[str]] = mapped_column(sa.JSON)


class MailCursor(Model):
    """The last event of a merchant turned into mail: the next tick starts after it.

    One sync at a time writes a merchant's events (its lease), but other events (an owner's
    test event, a refund's) take ids beside it, so a lower id may commit after a higher one:
    the tick also looks back a little below the cursor (`mail.LATE_WINDOW`).
    """

    __tablename__ = "mail_cursors"

    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), primary_key=True
    )
    last_event_id: Mapped[int] = mapped_column(default=0)


class MailState(enum.StrEnum):
    QUEUED = "queued"
    SENT = "sent"
    FAILED = "failed"  # given up after a day of refusals


class MailMessage(Model):
    """One mail to one address, queued until the SMTP server took it.

    A sender claims a message with a conditional UPDATE of `lease_until`, so several workers
    never send one twice; the body is dropped once sent or given up (it may hold a one-time
    link). An event is mailed to a user once (`event_id`, `user_id` unique).
    """

    __tablename__ = "mail_messages"
    __table_args__ = (
        sa.UniqueConstraint("event_id", "user_id"),
        sa.Index("ix_mail_messages_due", "state", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"))
    event_id: Mapped[int | None] = mapped_column(sa.ForeignKey("events.id", ondelete="CASCADE"))
    to_address: Mapped[str] = mapped_column(sa.String(254))
    subject: Mapped[str] = mapped_column(sa.String(255))
    body: Mapped[str | None] = mapped_column(sa.Text)
    state: Mapped[MailState] = mapped_column(enum_column(MailState), default=MailState.QUEUED)
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_error: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # The link that stops this kind of mail without signing in, sent as `List-Unsubscribe`
    # (RFC 8058); dropped with the body.
    stop_url: Mapped[str | None] = mapped_column(sa.String(500))
    # A file the mail carries (the statement's spreadsheet): dropped with the body once sent.
    attachment_name: Mapped[str | None] = mapped_column(sa.String(255))
    attachment: Mapped[bytes | None] = mapped_column(sa.LargeBinary, deferred=True)


class StatementFrequency(enum.StrEnum):
    NONE = "none"
    WEEKLY = "weekly"  # Monday to Sunday in the user's zone
    MONTHLY = "monthly"  # a calendar month in the user's zone


class StatementChoice(Model):
    """How often a user who reads money gets the statement by mail; no row means never.
    Only periods that end after `chosen_at` are sent: choosing mid-month brings no mail of a
    month that ended weeks ago."""

    __tablename__ = "statement_choices"

    user_id: Mapped[int] = mapped_column(
        sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    frequency: Mapped[StatementFrequency] = mapped_column(enum_column(StatementFrequency))
    chosen_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class StatementMail(Model):
    """A statement mail queued for a user and period (days in the user's zone, both included).
    Unique per user and period, and written in the transaction that queues the message: a
    restarted worker, or a second one, finds it and queues no second."""

    __tablename__ = "statement_mails"
    __table_args__ = (sa.UniqueConstraint("user_id", "period_start", "period_end"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"))
    period_start: Mapped[date] = mapped_column(sa.Date)
    period_end: Mapped[date] = mapped_column(sa.Date)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

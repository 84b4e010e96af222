"""The portal's own records: merchants, their users and sessions, and their API credentials."""

from __future__ import annotations

import enum
import hashlib
from datetime import UTC, datetime
from decimal import Decimal

import sqlalchemy as sa
from flask import current_app
from flask_login import UserMixin
from sqlalchemy.orm import Mapped, mapped_column, relationship
from werkzeug.security import check_password_hash, generate_password_hash

from portal.extensions import Model


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


class UtcDateTime(sa.TypeDecorator):
    """A timestamp stored in UTC that always comes back timezone-aware (SQLite drops the zone)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class DecimalText(sa.TypeDecorator):
    """An exact decimal amount stored as its text: no float on any database."""

    impl = sa.String(64)
    cache_ok = True

    def process_bind_param(self, value: Decimal | None, dialect: sa.Dialect) -> str | None:
        return None if value is None else format(Decimal(value), "f")

    def process_result_value(self, value: str | None, dialect: sa.Dialect) -> Decimal | None:
        return None if value is None else Decimal(value)


class Role(enum.StrEnum):
    """What a user may do in the portal (design section 1)."""

    OWNER = "owner"
    OPERATOR = "operator"
    ACCOUNTANT = "accountant"

    @property
    def label(self) -> str:
        return self.value.capitalize()


class Environment(enum.StrEnum):
    """The API environment: the sandbox puts `/sandbox` before `/v1`."""

    SANDBOX = "sandbox"
    PRODUCTION = "production"

    @property
    def label(self) -> str:
        return self.value.capitalize()


def _enum_column(enum_class: type[enum.StrEnum]) -> sa.Enum:
    return sa.Enum(
        enum_class,
        native_enum=False,
        create_constraint=True,
        length=20,
        values_callable=lambda members: [member.value for member in members],
    )


class Merchant(Model):
    """A merchant company: the unit that owns users and one API connection."""

    __tablename__ = "merchants"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(120), unique=True)
    # What customers see on the public checkout page, and the only place it sends them back to.
    display_name: Mapped[str | None] = mapped_column(sa.String(120))
    shop_url: Mapped[str | None] = mapped_column(sa.String(2048))
    support_email: Mapped[str | None] = mapped_column(sa.String(254))
    # Every user must have two-factor sign-in on; the unenrolled can open only the enrolment.
    require_two_factor: Mapped[bool] = mapped_column(default=False, server_default=sa.false())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    users: Mapped[list[User]] = relationship(
        back_populates="merchant", cascade="all, delete-orphan", order_by="User.email"
    )
    api_connection: Mapped[ApiConnection | None] = relationship(
        back_populates="merchant", cascade="all, delete-orphan"
    )
    # Read with the signed-in session (the menu's count follows the last sync); the mirror's
    # sync writes it.
    mirror_state: Mapped[MirrorState | None] = relationship(viewonly=True)

    @property
    def last_synced_at(self) -> datetime | None:
        """When the mirror last finished a sync of this merchant; None before its first one."""
        return self.mirror_state.last_sync_at if self.mirror_state else None


class User(UserMixin, Model):
    """A person who signs in; belongs to exactly one merchant."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), index=True
    )
    email: Mapped[str] = mapped_column(sa.String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(sa.String(256))
    role: Mapped[Role] = mapped_column(_enum_column(Role))
    # An IANA zone name (`Europe/Berlin`) in which this person reads timestamps.
    time_zone: Mapped[str] = mapped_column(sa.String(64), default="UTC", server_default="UTC")
    # Two-factor sign-in (portal/auth/two_factor.py): the TOTP secret, encrypted like the API
    # tokens, is kept from the start of enrolment; two-factor is on once `totp_enabled_at` is set.
    totp_secret_encrypted: Mapped[str | None] = mapped_column(sa.Text)
    totp_enabled_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # The time step of the last code accepted: that code and older ones are refused (replay).
    totp_last_step: Mapped[int | None] = mapped_column(sa.BigInteger)
    # The password was typed by someone else (an owner adding the user or setting a new one):
    # the user chooses their own before anything else (`portal.web.access.enforce`).
    must_choose_password: Mapped[bool] = mapped_column(default=False, server_default=sa.false())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    merchant: Mapped[Merchant] = relationship(back_populates="users")
    sessions: Mapped[list[UserSession]] = relationship(
        back_populates="user", cascade="all, delete-orphan", passive_deletes=True
    )
    recovery_codes: Mapped[list[RecoveryCode]] = relationship(
        back_populates="user", cascade="all, delete-orphan", passive_deletes=True
    )

    # The signed-in session this object was loaded for; Flask-Login keeps it in the cookie.
    # Not a column: SQLAlchemy is told to leave annotations without `Mapped[]` unmapped.
    __allow_unmapped__ = True
    session_key: str | None = None

    def set_password(self, password: str) -> None:
        """Hashed by PASSWORD_HASH_METHOD; each hash names its method, so any still checks."""
        method = current_app.config["PASSWORD_HASH_METHOD"]
        self.password_hash = generate_password_hash(password, method=method)

    def check_password(self, password: str) -> bool:
        return check_password_hash(self.password_hash, password)

    def get_id(self) -> str | None:
        """Flask-Login stores the session's key, not the user id, so that sign-out revokes it."""
        return self.session_key

    @property
    def two_factor_enabled(self) -> bool:
        return self.totp_enabled_at is not None

    @property
    def two_factor_due(self) -> bool:
        """The merchant requires two-factor sign-in and this user has not set it up yet."""
        return self.merchant.require_two_factor and not self.two_factor_enabled


class RecoveryCode(Model):
    """One unused recovery code of a user, as a SHA-256 hash; using it deletes the row.

    The codes are random with 79 bits, so a fast hash is enough (nothing to guess from it), and
    it lets a code be found, and consumed, with one DELETE.
    """

    __tablename__ = "recovery_codes"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), index=True)
    code_hash: Mapped[str] = mapped_column(sa.String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    user: Mapped[User] = relationship(back_populates="recovery_codes")


def session_key_hash(key: str) -> str:
    """How a session's key is stored: its SHA-256, never the key that the cookie carries."""
    return hashlib.sha256(key.encode()).hexdigest()


class UserSession(Model):
    """A signed-in browser session; deleting the row signs that browser out."""

    __tablename__ = "user_sessions"

    key_hash: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    user: Mapped[User] = relationship(back_populates="sessions")


class ApiConnection(Model):
    """How a merchant reaches the Merchant API; tokens are stored encrypted, never in clear."""

    __tablename__ = "api_connections"

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), unique=True
    )
    base_url: Mapped[str] = mapped_column(sa.String(2048))
    environment: Mapped[Environment] = mapped_column(_enum_column(Environment))
    token_encrypted: Mapped[str] = mapped_column(sa.Text)
    company_token_encrypted: Mapped[str | None] = mapped_column(sa.Text)
    # Which of the merchant's connections this is: one more each time the base URL, the
    # environment or the token changes (another account, perhaps). The mirror and its events
    # belong to one generation: a new one starts a new mirror (`portal.rules.connection`).
    generation: Mapped[int] = mapped_column(default=1, server_default="1")
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)

    merchant: Mapped[Merchant] = relationship(back_populates="api_connection")


class CheckoutLink(Model):
    """The public checkout page's reference to one operation: a random token, nothing readable.

    Created before the operation (its URL is the operation's `redirect_url`); the operation id is
    filled in once the API has created it.
    """

    __tablename__ = "checkout_links"

    id: Mapped[int] = mapped_column(primary_key=True)
    token: Mapped[str] = mapped_column(sa.String(64), unique=True)
    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), index=True
    )
    operation_id: Mapped[str | None] = mapped_column(sa.String(64))
    # Finds the operation again when the API created it but its answer was lost.
    order_id: Mapped[str | None] = mapped_column(sa.String(255))
    # The amount asked, kept when the operation is attached: the page still shows it when the
    # API will not answer for the merchant (banned) or cannot be reached.
    amount: Mapped[Decimal | None] = mapped_column(DecimalText)
    currency: Mapped[str | None] = mapped_column(sa.String(16))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    merchant: Mapped[Merchant] = relationship()


class IntentState(enum.StrEnum):
    """Where an intent (withdrawal or form) is: only a `pending` one may be sent, and only once."""

    PENDING = "pending"  # not sent yet (a withdrawal under review, or nothing left the portal)
    SENDING = "sending"  # claimed by one request; the request to the API is on its way
    SENT = "sent"  # the API made what was asked (its id is kept)
    REFUSED = "refused"  # the API refused it (error_code); nothing moved
    UNKNOWN = "unknown"  # sent, but no answer: check the list before trying again


class WithdrawalIntent(Model):
    """One reviewed withdrawal form: the server-side guarantee of exactly one upstream request.

    `key` is the unguessable reference in the review page's URL. Confirming moves the state from
    `pending` to `sending` with one conditional UPDATE, so across threads and processes only one
    confirmation ever sends it.
    """

    __tablename__ = "withdrawal_intents"

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(sa.String(64), unique=True)
    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    amount: Mapped[Decimal] = mapped_column(DecimalText)
    wallet: Mapped[str] = mapped_column(sa.String(16))
    address: Mapped[str] = mapped_column(sa.String(255))
    state: Mapped[IntentState] = mapped_column(_enum_column(IntentState))
    operation_id: Mapped[str | None] = mapped_column(sa.String(64))
    operation_status: Mapped[str | None] = mapped_column(sa.String(32))
    # The network fee the API reported for the sent withdrawal (it tells none before).
    fee: Mapped[Decimal | None] = mapped_column(DecimalText)
    error_code: Mapped[int | None]
    error_message: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)

    user: Mapped[User | None] = relationship()


class IntentKind(enum.StrEnum):
    """The forms that move money and are sent exactly once through `FormIntent`."""

    EXCHANGE = "exchange"
    VOUCHER = "voucher"
    CROSS_EXCHANGE = "cross_exchange"
    OPERATION = "operation"


class FormIntent(Model):
    """One sending of a form that moves money, under the one-time key the form carried.

    The form page carries a fresh random `key`; the POST claims it by inserting this row (or by
    moving a `pending` one to `sending`), so however often the same form arrives, by reload,
    double click or in parallel on several workers, only one request goes to the API. Keys are
    the merchant's own: another merchant's key finds nothing here.
    """

    __tablename__ = "form_intents"
    __table_args__ = (sa.UniqueConstraint("merchant_id", "kind", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    kind: Mapped[IntentKind] = mapped_column(_enum_column(IntentKind))
    key: Mapped[str] = mapped_column(sa.String(64))
    user_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    # What the form asked for, as text (amounts exactly), for the pages that say where it stands.
    parameters: Mapped[dict] = mapped_column(sa.JSON)
    state: Mapped[IntentState] = mapped_column(_enum_column(IntentState))
    record_id: Mapped[str | None] = mapped_column(sa.String(64))  # what the API made
    error_code: Mapped[int | None]
    error_message: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)


class CrossExchangeReference(Model):
    """A cross exchange created through the portal: the API has no list, so the portal keeps ids."""

    __tablename__ = "cross_exchange_references"
    __table_args__ = (sa.UniqueConstraint("merchant_id", "cross_exchange_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    cross_exchange_id: Mapped[str] = mapped_column(sa.String(64))
    user_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    sell_currency: Mapped[str] = mapped_column(sa.String(16))
    buy_currency: Mapped[str] = mapped_column(sa.String(16))
    sell_amount: Mapped[Decimal] = mapped_column(DecimalText)
    buy_amount: Mapped[Decimal] = mapped_column(DecimalText)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    user: Mapped[User | None] = relationship()


class ExchangeRecord(Model):
    """An exchange made through the portal, as the API answered it: the API has no list of
    exchanges and never shows one again, so the portal keeps what it was told."""

    __tablename__ = "exchange_records"
    __table_args__ = (sa.UniqueConstraint("merchant_id", "exchange_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    exchange_id: Mapped[str] = mapped_column(sa.String(64))
    user_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    sell_currency: Mapped[str] = mapped_column(sa.String(16))
    buy_currency: Mapped[str] = mapped_column(sa.String(16))
    sell_amount: Mapped[Decimal | None] = mapped_column(DecimalText)
    buy_amount: Mapped[Decimal | None] = mapped_column(DecimalText)
    rate: Mapped[Decimal | None] = mapped_column(DecimalText)
    fee: Mapped[Decimal | None] = mapped_column(DecimalText)
    status: Mapped[str | None] = mapped_column(sa.String(32))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    user: Mapped[User | None] = relationship()


class AuditEvent(Model):
    """One state-changing action, as `portal.rules.audit.record` wrote it; never changed afterwards.

    `user_email` keeps who it was after the user is removed; `merchant_id` is null only for a
    failed sign-in with an email nobody has.
    """

    __tablename__ = "audit_events"
    __table_args__ = (sa.Index("ix_audit_events_merchant_created", "merchant_id", "created_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE")
    )
    user_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    user_email: Mapped[str | None] = mapped_column(sa.String(254))
    action: Mapped[str] = mapped_column(sa.String(64))
    parameters: Mapped[dict] = mapped_column(sa.JSON)
    outcome: Mapped[str] = mapped_column(sa.String(16))
    error_code: Mapped[int | None]
    error_message: Mapped[str | None] = mapped_column(sa.Text)
    remote_address: Mapped[str | None] = mapped_column(sa.String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


# --- The mirror of the API (portal/rules/mirror.py) and the events it writes -----------------


class MirroredOperation(Model):
    """An operation as the API last showed it to the mirror; a copy, never the truth to act on.

    The columns are what lists, search and the attention list filter on; `record` keeps the
    API's whole record (transactions included) for webhooks and timelines.
    """

    __tablename__ = "mirrored_operations"
    __table_args__ = (
        sa.UniqueConstraint("merchant_id", "operation_id"),
        sa.Index("ix_mirrored_operations_merchant_updated", "merchant_id", "updated_at"),
        # Every column the dashboard's figures read (migration 0015): the table is not read.
        sa.Index(
            "ix_mirrored_operations_merchant_created_figures",
            "merchant_id",
            "created_at",
            "status",
            "currency",
            "amount",
            "amount_paid",
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    operation_id: Mapped[str] = mapped_column(sa.String(64))
    order_id: Mapped[str | None] = mapped_column(sa.String(255))
    category: Mapped[str] = mapped_column(sa.String(32))
    status: Mapped[str] = mapped_column(sa.String(32))
    amount: Mapped[Decimal] = mapped_column(DecimalText)
    amount_paid: Mapped[Decimal | None] = mapped_column(DecimalText)
    currency: Mapped[str] = mapped_column(sa.String(16))
    currency_paid: Mapped[str | None] = mapped_column(sa.String(16))
    address: Mapped[str | None] = mapped_column(sa.String(255))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)  # the API's
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)  # the API's
    record: Mapped[dict] = mapped_column(sa.JSON)
    mirrored_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)


class MirroredTransaction(Model):
    """A blockchain transaction as the API last showed it to the mirror."""

    __tablename__ = "mirrored_transactions"
    __table_args__ = (
        sa.UniqueConstraint("merchant_id", "transaction_id"),
        sa.Index("ix_mirrored_transactions_merchant_operation", "merchant_id", "operation_id"),
        sa.Index("ix_mirrored_transactions_merchant_updated", "merchant_id", "updated_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    transaction_id: Mapped[str] = mapped_column(sa.String(64))
    operation_id: Mapped[str | None] = mapped_column(sa.String(64))
    tx_id: Mapped[str | None] = mapped_column(sa.String(255))  # the hash on the blockchain
    amount: Mapped[Decimal] = mapped_column(DecimalText)
    status: Mapped[str] = mapped_column(sa.String(32))
    linked: Mapped[bool] = mapped_column(default=False)
    reject_reason: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)  # the API's
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)  # the API's
    record: Mapped[dict] = mapped_column(sa.JSON)
    mirrored_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)


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


# --- Signed webhooks to the merchant's shop (portal/rules/webhooks.py) ------------------------


class WebhookEndpoint(Model):
    """Where a merchant's shop receives events, which types, and the secrets that sign them.

    Secrets are stored encrypted (`portal.rules.crypto`). After a rotation the previous secret
    signs too, beside the new one, until `previous_secret_until`. Only events with an id above
    `since_event_id` are sent: a shop is never told of what happened before it was set up.
    """

    __tablename__ = "webhook_endpoints"

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), unique=True
    )
    url: Mapped[str] = mapped_column(sa.String(2048))
    event_types: Mapped[list[str]] = mapped_column(sa.JSON)
    secret_encrypted: Mapped[str] = mapped_column(sa.Text)
    previous_secret_encrypted: Mapped[str | None] = mapped_column(sa.Text)
    previous_secret_until: Mapped[datetime | None] = mapped_column(UtcDateTime)
    enabled: Mapped[bool] = mapped_column(default=True)
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
        _enum_column(DeliveryState), default=DeliveryState.PENDING
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


class WebhookAttempt(Model):
    """One POST of a delivery, as the delivery log shows it."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (sa.Index("ix_webhook_attempts_delivery", "delivery_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[int] = mapped_column(
        sa.ForeignKey("webhook_deliveries.id", ondelete="CASCADE")
    )
    started_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    status: Mapped[int | None]  # the shop's HTTP status; None when no answer came
    error: Mapped[str | None] = mapped_column(sa.String(255))
    duration_ms: Mapped[int]
    manual: Mapped[bool] = mapped_column(default=False)

    delivery: Mapped[WebhookDelivery] = relationship()


# --- E-mail: each user's choices, the outbox, one-time links (portal/rules/mail.py) ----------


class MailChoice(Model):
    """The event types a user chose to be mailed about; no row means the role's default."""

    __tablename__ = "mail_choices"

    user_id: Mapped[int] = mapped_column(
        sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    event_types: Mapped[list[str]] = mapped_column(sa.JSON)


class MailCursor(Model):
    """The last event of a merchant turned into mail: the next tick starts after it.

    One merchant's events are written by one sync at a time (its lease), so their ids are
    committed in order and a cursor per merchant skips none.
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
    state: Mapped[MailState] = mapped_column(_enum_column(MailState), default=MailState.QUEUED)
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_error: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class LinkPurpose(enum.StrEnum):
    INVITE = "invite"
    RESET = "reset"


class OneTimeLink(Model):
    """A link mailed to a person that works once, until it expires: only its token's SHA-256 is
    kept, so the table alone opens no account."""

    __tablename__ = "one_time_links"

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    purpose: Mapped[LinkPurpose] = mapped_column(_enum_column(LinkPurpose))
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), index=True)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    user: Mapped[User] = relationship()


class ResetRequest(Model):
    """A reset link asked for an address, until the worker looks it up and mails the link (or
    drops the request of an address nobody uses): the request itself does the same either way."""

    __tablename__ = "reset_requests"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(sa.String(254))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


# --- Search and the attention list over the mirror (issue 15, points 5 and 6) ----------------
# What the attention list counts on every page: undecided transactions, operations by status;
# each index holds every column its count reads (the rows' `record` is large).
sa.Index(
    "ix_mirrored_operations_merchant_status",
    MirroredOperation.merchant_id,
    MirroredOperation.status,
    MirroredOperation.updated_at,
    MirroredOperation.operation_id,
    MirroredOperation.amount_paid,
)
sa.Index(
    "ix_mirrored_transactions_merchant_status",
    MirroredTransaction.merchant_id,
    MirroredTransaction.status,
    MirroredTransaction.linked,
    MirroredTransaction.operation_id,
)
sa.Index(
    "ix_mirrored_transactions_merchant_operation_status",
    MirroredTransaction.merchant_id,
    MirroredTransaction.operation_id,
    MirroredTransaction.status,
    MirroredTransaction.linked,
)
# Migration 0014 adds, on SQLite, FTS5 tables (trigram) over the searched columns, kept by
# triggers, and on PostgreSQL trigram indexes of lower-cased columns: no models, so a
# comparison of the models with the schema leaves them out.
SEARCH_INDEX_TABLES = ("mirrored_operations_search", "mirrored_transactions_search")
TRIGRAM_INDEX_SUFFIX = "_trigram"


def is_modelled(name: str | None, type_: str, _parent_names: object) -> bool:
    """For Alembic's `include_name`: False for the search indexes of migration 0014 (the FTS5
    tables with their shadow tables, and the trigram indexes)."""
    if name is None:
        return True
    if type_ == "table":
        return not name.startswith(SEARCH_INDEX_TABLES)
    return not (type_ == "index" and name.endswith(TRIGRAM_INDEX_SUFFIX))

"""Money the portal moves and counts: idempotency records of withdrawals and other forms,
exchanges and cross exchanges it made, the rates it recorded and the ledger of movements."""

from __future__ import annotations

import enum
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import InstrumentedAttribute, Mapped, mapped_column, relationship

from portal.database import DecimalText, UtcDateTime, enum_column, utcnow
from portal.extensions import Model


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
    state: Mapped[IntentState] = mapped_column(enum_column(IntentState))
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
    """The forms that move money and are sent exactly once through `IdempotencyKey`."""

    EXCHANGE = "exchange"
    VOUCHER = "voucher"
    CROSS_EXCHANGE = "cross_exchange"
    OPERATION = "operation"


class IdempotencyKey(Model):
    """One sending of a form that moves money, under the idempotency key the form carried.

    The form page carries a fresh random `key`; the POST claims it by inserting this row (or by
    moving a `pending` one to `sending`), so however often the same form arrives, by reload,
    double click or in parallel on several workers, only one request goes to the API. Keys are
    the merchant's own: another merchant's key finds nothing here.
    """

    __tablename__ = "form_intents"
    __table_args__ = (sa.UniqueConstraint("merchant_id", "kind", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    kind: Mapped[IntentKind] = mapped_column(enum_column(IntentKind))
    key: Mapped[str] = mapped_column(sa.String(64))
    user_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    # What the form asked for, as text (amounts exactly), for the pages that say where it stands.
    parameters: Mapped[dict] = mapped_column(sa.JSON)
    state: Mapped[IntentState] = mapped_column(enum_column(IntentState))
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
    # The operation that waits for the sold currency: its money is the exchange's, not a sale.
    operation_id: Mapped[str | None] = mapped_column(sa.String(64))
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


class RateRecord(Model):
    """`/v1/rates` as the mirror read it: a row each time a rate changed, and the span over which
    the same rates were read again, so that a value knows how fresh its rate was
    (`portal.money.rules.rate_history`)."""

    __tablename__ = "rate_records"
    __table_args__ = (
        sa.Index(
            "ix_rate_records_merchant_recorded",
            "merchant_id",
            "connection_generation",
            "recorded_at",
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    connection_generation: Mapped[int]
    recorded_at: Mapped[datetime] = mapped_column(UtcDateTime)
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime)
    rates: Mapped[dict] = mapped_column(sa.JSON)  # "BASE:QUOTE" -> the price as decimal text


class LedgerEntry(Model):
    """One movement of one wallet, booked once under its `key` (`portal.money.rules.ledger`).

    `amount` is signed (money in is positive) in the wallet's `currency`. `occurred_at` is when
    the portal first saw the movement (the API's own time beside it, `api_at`); `value` is the
    amount in the merchant's reporting currency at the rate of that moment, kept as it was
    booked: a later rate changes nothing, a change of reporting currency values it again.
    """

    __tablename__ = "ledger_entries"
    __table_args__ = (
        sa.UniqueConstraint("merchant_id", "connection_generation", "key"),
        # With what the dashboard's sums read (migration 0028): the table is not read.
        sa.Index(
            "ix_ledger_entries_merchant_kind_occurred",
            "merchant_id",
            "connection_generation",
            "kind",
            "occurred_at",
            "currency",
            "amount",
            "value",
            "value_currency",
        ),
        # The ledger's export reads a period in this order, 500 at a time (migration 0028).
        sa.Index(
            "ix_ledger_entries_merchant_occurred",
            "merchant_id",
            "connection_generation",
            "occurred_at",
            "id",
        ),
        sa.Index(
            "ix_ledger_entries_merchant_operation",
            "merchant_id",
            "connection_generation",
            "operation_id",
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    connection_generation: Mapped[int]
    key: Mapped[str] = mapped_column(sa.String(200))
    kind: Mapped[str] = mapped_column(sa.String(32))
    currency: Mapped[str] = mapped_column(sa.String(16))
    amount: Mapped[Decimal] = mapped_column(DecimalText)
    operation_id: Mapped[str | None] = mapped_column(sa.String(64))
    occurred_at: Mapped[datetime] = mapped_column(UtcDateTime)
    api_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # The operation's own currency and rate: money of an operation priced in the reporting
    # currency is worth what it paid at that rate, whatever the market did.
    priced_in: Mapped[str | None] = mapped_column(sa.String(16))
    operation_rate: Mapped[Decimal | None] = mapped_column(DecimalText)
    value: Mapped[Decimal | None] = mapped_column(DecimalText)  # None: no rate
    value_currency: Mapped[str | None] = mapped_column(sa.String(16))
    rate: Mapped[Decimal | None] = mapped_column(DecimalText)
    rate_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


# What a ledger total is the total of: its row is found by these, and added to.
LEDGER_TOTAL_KEY = (
    "merchant_id",
    "connection_generation",
    "span",
    "starts",
    "currency",
    "kind",
    "value_currency",
)


class LedgerTotal(Model):
    """What one kind of movement added to one currency in one calendar month or one day (UTC),
    kept up to date as movements are booked (`portal.money.rules.ledger_totals`): a balance or
    a statement adds up the months and days it covers whole and reads movements only for the
    parts of days at its ends, whatever the size of the ledger.

    `value` adds up the values of the movements valued in `value_currency` (`valued` of them;
    "" when none of them has a value currency); `first_at` and `last_at` are the first and last
    movements' moments.
    """

    __tablename__ = "ledger_totals"
    __table_args__ = (sa.UniqueConstraint(*LEDGER_TOTAL_KEY),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    connection_generation: Mapped[int]
    span: Mapped[str] = mapped_column(sa.String(8))  # "month" or "day"
    starts: Mapped[date] = mapped_column(sa.Date)  # its first day
    currency: Mapped[str] = mapped_column(sa.String(16))
    kind: Mapped[str] = mapped_column(sa.String(32))
    value_currency: Mapped[str] = mapped_column(sa.String(16))
    amount: Mapped[Decimal] = mapped_column(DecimalText)
    count: Mapped[int]
    value: Mapped[Decimal] = mapped_column(DecimalText)
    valued: Mapped[int]
    first_at: Mapped[datetime] = mapped_column(UtcDateTime)
    last_at: Mapped[datetime] = mapped_column(UtcDateTime)


class RefundStage(enum.StrEnum):
    """Where a refund is before and apart from its one sending (`Refund.state`)."""

    REQUESTED = "requested"  # the claim link waits for the customer's address
    AWAITING_APPROVAL = "awaiting_approval"  # an address an operator typed waits for an owner
    READY = "ready"  # an address is known and approved: the worker sends it once (`state`)
    CANCELED = "canceled"
    EXPIRED = "expired"  # the claim link was never used in time


class Refund(Model):
    """Money of one operation sent back to its customer: a withdrawal tied to the operation.

    `number` counts the operation's refunds; two requests that read the same refunds race for
    the same number and only one is stored, so together they never refund more than was
    counted. The claim link's token is looked up by its SHA-256; while the link is unclaimed the
    token is also kept encrypted (`portal.crypto`), so that staff can read the link on the
    refund's page, and dropped once it is claimed, canceled or expired. An amount given in
    another currency keeps what was typed and the rate that converted it. Once an address is
    known and approved, `state` is the one-time sending of `portal.money.rules.idempotency`.
    """

    __tablename__ = "refunds"
    __table_args__ = (sa.UniqueConstraint("merchant_id", "operation_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    # The API connection it was asked through: its operation ids are that account's own.
    connection_generation: Mapped[int] = mapped_column(server_default="1")
    operation_id: Mapped[str] = mapped_column(sa.String(64))
    number: Mapped[int]
    user_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    currency: Mapped[str] = mapped_column(sa.String(16))
    amount: Mapped[Decimal] = mapped_column(DecimalText)
    token_hash: Mapped[str | None] = mapped_column(sa.String(64), unique=True)
    token_encrypted: Mapped[str | None] = mapped_column(sa.Text)
    # An amount typed in another currency (`portal.money.rules.refunds.Basis`): what was typed,
    # in which currency, and the price of one unit of `currency` in it, read at `rate_at`.
    basis: Mapped[str | None] = mapped_column(sa.String(16))
    entered_amount: Mapped[Decimal | None] = mapped_column(DecimalText)
    entered_currency: Mapped[str | None] = mapped_column(sa.String(16))
    rate: Mapped[Decimal | None] = mapped_column(DecimalText)
    rate_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    customer_email: Mapped[str | None] = mapped_column(sa.String(254))
    address: Mapped[str | None] = mapped_column(sa.String(255))
    typed_by_staff: Mapped[bool] = mapped_column(default=False)
    approved_by_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("users.id", ondelete="SET NULL")
    )
    stage: Mapped[RefundStage] = mapped_column(enum_column(RefundStage))
    state: Mapped[IntentState | None] = mapped_column(enum_column(IntentState))
    withdrawal_id: Mapped[str | None] = mapped_column(sa.String(64))
    fee: Mapped[Decimal | None] = mapped_column(DecimalText)
    error_code: Mapped[int | None]
    error_message: Mapped[str | None] = mapped_column(sa.Text)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    claimed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    sent_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)

    user: Mapped[User | None] = relationship(foreign_keys=[user_id])


class WithdrawalLimit(Model):
    """One currency's own limits, in its units, set by an owner: the most one withdrawal may
    take and the most that may leave per day (UTC, as the API's own daily limit counts). They
    override the merchant's limits in the reporting currency for this currency; the API tells
    neither its limit nor what is left. None: no limit of that kind."""

    __tablename__ = "withdrawal_limits"
    __table_args__ = (sa.UniqueConstraint("merchant_id", "currency"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    currency: Mapped[str] = mapped_column(sa.String(16))
    daily_limit: Mapped[Decimal | None] = mapped_column(DecimalText)
    per_withdrawal: Mapped[Decimal | None] = mapped_column(DecimalText)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)


class ApprovalKind(enum.StrEnum):
    """What an approval lets go: each is sent by the worker once approved."""

    WITHDRAWAL = "withdrawal"
    REFUND = "refund"
    VOUCHER = "voucher"


class ApprovalState(enum.StrEnum):
    WAITING = "waiting"  # for an owner other than the one who asked
    APPROVED = "approved"  # the worker sends what it holds, once
    REJECTED = "rejected"  # by another owner: nothing is sent
    WITHDRAWN = "withdrawn"  # by the person who asked: nothing is sent
    EXPIRED = "expired"  # nobody decided within `approvals.EXPIRES_AFTER`: nothing is sent


class Approval(Model):
    """Money held until an owner other than the one who asked says yes.

    It holds one withdrawal intent, one refund or one voucher's form (unique, so two
    confirmations of one form hold it once). `value` is the amount in the reporting currency
    when it was asked (None: no rate); `reason` why it waits. Deciding moves `state` from
    `waiting` with one conditional UPDATE, so of many approvals at once exactly one decides.
    """

    __tablename__ = "approvals"
    __table_args__ = (sa.Index("ix_approvals_merchant_state", "merchant_id", "state"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    kind: Mapped[ApprovalKind] = mapped_column(enum_column(ApprovalKind))
    withdrawal_intent_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("withdrawal_intents.id", ondelete="CASCADE"), unique=True
    )
    refund_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("refunds.id", ondelete="CASCADE"), unique=True
    )
    # A voucher's form, its idempotency key held `pending` until the worker creates it.
    voucher_intent_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("form_intents.id", ondelete="CASCADE"), unique=True
    )
    amount: Mapped[Decimal] = mapped_column(DecimalText)
    currency: Mapped[str] = mapped_column(sa.String(16))
    address: Mapped[str | None] = mapped_column(sa.String(255))
    value: Mapped[Decimal | None] = mapped_column(DecimalText)
    value_currency: Mapped[str] = mapped_column(sa.String(16))
    reason: Mapped[str] = mapped_column(sa.String(32))
    state: Mapped[ApprovalState] = mapped_column(enum_column(ApprovalState))
    requested_by_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("users.id", ondelete="SET NULL")
    )
    decided_by_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("users.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime)

    requested_by: Mapped[User | None] = relationship(foreign_keys=[requested_by_id])
    decided_by: Mapped[User | None] = relationship(foreign_keys=[decided_by_id])
    withdrawal: Mapped[WithdrawalIntent | None] = relationship()
    refund: Mapped[Refund | None] = relationship()
    voucher: Mapped[IdempotencyKey | None] = relationship()


class BookAddress(Model):
    """A named withdrawal or refund address of the merchant's address book.

    Money goes only to an address of the book (a customer's claimed refund address aside), from
    `usable_from` on: the cooling-off period after it was added, or at once when an owner other
    than the one who added it approved it (`approved_by_id`).
    """

    __tablename__ = "address_book"
    __table_args__ = (sa.UniqueConstraint("merchant_id", "currency", "address"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    currency: Mapped[str] = mapped_column(sa.String(16))
    address: Mapped[str] = mapped_column(sa.String(255))
    name: Mapped[str] = mapped_column(sa.String(120))
    added_by_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    approved_by_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("users.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    usable_from: Mapped[datetime] = mapped_column(UtcDateTime)

    added_by: Mapped[User | None] = relationship(foreign_keys=[added_by_id])
    approved_by: Mapped[User | None] = relationship(foreign_keys=[approved_by_id])

    @classmethod
    def lists(
        cls,
        merchant_id: InstrumentedAttribute[int],
        currency: InstrumentedAttribute[str],
        address: InstrumentedAttribute[Any],
    ) -> sa.Exists:
        """Whether the book holds the address (of a row's columns): for the statements that
        send money, so that an address removed meanwhile receives nothing."""
        return sa.exists().where(
            cls.merchant_id == merchant_id, cls.currency == currency, cls.address == address
        )


class ControlKind(enum.StrEnum):
    """Which control a change relaxes."""

    LIMITS = "limits"  # the limits in the reporting currency
    OWN_LIMITS = "own_limits"  # one currency's own limits (`currency`)
    OWNER = "owner"  # `user` becomes an owner
    NOT_OWNER = "not_owner"  # `user`, an owner, becomes an accountant (another owner asked)
    COOLING_OFF = "cooling_off"  # the address book's cooling-off (`hours`)


class ControlChange(Model):
    """A relaxed control no owner makes alone (`portal.money.rules.controls`).

    It waits for an owner other than the one who asked, or, when there is none, takes effect at
    `due_at`. `before` and `after` say in words what changes from what to what; the new values
    are in `per_withdrawal`, `per_day`, `hours` or `user_id`, by `kind`. Deciding moves `state`
    from `waiting` with one conditional UPDATE, so the change is applied once.
    """

    __tablename__ = "control_changes"
    __table_args__ = (sa.Index("ix_control_changes_merchant_state", "merchant_id", "state"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    kind: Mapped[ControlKind] = mapped_column(enum_column(ControlKind))
    currency: Mapped[str | None] = mapped_column(sa.String(16))
    per_withdrawal: Mapped[Decimal | None] = mapped_column(DecimalText)
    per_day: Mapped[Decimal | None] = mapped_column(DecimalText)
    hours: Mapped[Decimal | None] = mapped_column(DecimalText)
    # SET NULL: a change for a removed user still waits, counted, until canceled or applied
    # (applying it then changes nothing).
    user_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    before: Mapped[str] = mapped_column(sa.String(255))
    after: Mapped[str] = mapped_column(sa.String(255))
    state: Mapped[ApprovalState] = mapped_column(enum_column(ApprovalState))
    requested_by_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("users.id", ondelete="SET NULL")
    )
    decided_by_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("users.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    due_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime)

    user: Mapped[User | None] = relationship(foreign_keys=[user_id])
    requested_by: Mapped[User | None] = relationship(foreign_keys=[requested_by_id])
    decided_by: Mapped[User | None] = relationship(foreign_keys=[decided_by_id])


# The models this module's relationships name, imported once its own are defined (they import
# this module in turn): SQLAlchemy resolves the names when the first query configures the mappers.
from portal.identity.models import User  # noqa: E402

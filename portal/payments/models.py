"""Payments as the portal keeps them: the mirror's copy of operations and transactions, and the
checkout page's links."""

from __future__ import annotations

import enum
from datetime import date, datetime
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column, relationship

from portal.database import DecimalText, UtcDateTime, enum_column, utcnow
from portal.extensions import Model


class CheckoutLink(Model):
    """The public checkout page's reference to one operation: a random token, nothing readable.

    Created before the operation (its URL is the operation's `redirect_url`); the operation id is
    filled in once the API has created it. The id is the account's own: the link shows it only
    while the merchant's connection is the one it was made under (`connection_generation`).
    """

    __tablename__ = "checkout_links"

    id: Mapped[int] = mapped_column(primary_key=True)
    token: Mapped[str] = mapped_column(sa.String(64), unique=True)
    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), index=True
    )
    # The API connection the link was made under (migration 0042): its operation ids are that
    # account's own, and another account numbers its operations alike.
    connection_generation: Mapped[int] = mapped_column(server_default="1")
    operation_id: Mapped[str | None] = mapped_column(sa.String(64))
    # Finds the operation again when the API created it but its answer was lost.
    order_id: Mapped[str | None] = mapped_column(sa.String(255))
    # The amount asked, kept when the operation is attached: the page still shows it when the
    # API will not answer for the merchant (banned) or cannot be reached.
    amount: Mapped[Decimal | None] = mapped_column(DecimalText)
    currency: Mapped[str | None] = mapped_column(sa.String(16))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    merchant: Mapped[Merchant] = relationship()


# --- The mirror of the API (portal/live/rules/mirror.py) and the events it writes -----------------


class MirroredOperation(Model):
    """An operation as the API last showed it to the mirror; a copy, never the truth to act on.

    The columns are what lists, search and the attention list filter on; `record` keeps the
    API's whole record (transactions included) for webhooks and timelines.
    """

    __tablename__ = "mirrored_operations"
    __table_args__ = (
        sa.UniqueConstraint("merchant_id", "operation_id"),
        sa.Index("ix_mirrored_operations_merchant_updated", "merchant_id", "updated_at"),
        # Every column the dashboard's figures read (migrations 0015, 0028): the table is not
        # read.
        sa.Index(
            "ix_mirrored_operations_merchant_created_figures",
            "merchant_id",
            "created_at",
            "status",
            "currency",
            "amount",
            "amount_paid",
            "category",
            "state",
            "operation_id",
        ),
        # The withdrawals of a period, which the dashboard shows apart (migration 0032).
        sa.Index(
            "ix_mirrored_operations_merchant_category_created",
            "merchant_id",
            "category",
            "created_at",
            "currency",
            "amount",
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
    # What the money amounts to (`portal.payments.rules.operation_money.State`) and received -
    # due, as of the last sync: the lists' state filter and the attention list read these.
    state: Mapped[str | None] = mapped_column(sa.String(32))
    difference: Mapped[Decimal | None] = mapped_column(DecimalText)
    # The last ended status the mirror saw (expired, canceled, failed): money linked afterwards
    # is late even though the API then says `confirmed`.
    ended_status: Mapped[str | None] = mapped_column(sa.String(32))
    # How many of an expired or canceled operation's transactions are neither linked nor
    # rejected, and when the newest of them was created; None when none
    # (`mirror_money.late_money`): the attention list finds the few with any in indexes of
    # them alone.
    late_transactions: Mapped[int | None]
    late_since: Mapped[datetime | None] = mapped_column(UtcDateTime)


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


class DecisionKind(enum.StrEnum):
    HANDLED = "handled"  # linked, rejected or canceled through the portal: gone until the next sync
    SETTLED = "settled"  # an over- or underpayment closed by hand, with a note: no API action


class Decision(Model):
    """What a person decided about an item of the attention list, as the portal knows it before
    the mirror does.

    A `handled` mark hides its item until the mirror's next sync, which writes the change as an
    event (once). A `settled` mark closes an operation whose money is wrong for the `received`
    amount it was settled at: more money arriving later brings it back.
    """

    __tablename__ = "decisions"
    __table_args__ = (sa.Index("ix_decisions_merchant_operation", "merchant_id", "operation_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    connection_generation: Mapped[int]
    kind: Mapped[DecisionKind] = mapped_column(enum_column(DecisionKind))
    operation_id: Mapped[str] = mapped_column(sa.String(64))
    transaction_id: Mapped[str | None] = mapped_column(sa.String(64))
    received: Mapped[Decimal | None] = mapped_column(DecimalText)
    note: Mapped[str | None] = mapped_column(sa.Text)
    user_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


# What a total of operations is kept under (`OperationTotal`).
OPERATION_TOTAL_KEY = ("merchant_id", "span", "starts", "category", "state")


class OperationTotal(Model):
    """How many of the merchant's mirrored operations were created in a UTC month or day
    (`span`, `starts`: its first day), by category and money state ("" for none). The
    database keeps it (migration 0032's triggers on `mirrored_operations`): every insert adds,
    every change of state, category or creation moves and every delete takes out, whichever
    code wrote the row. `portal.payments.rules.operation_totals` adds them up."""

    __tablename__ = "operation_totals"
    __table_args__ = (sa.UniqueConstraint(*OPERATION_TOTAL_KEY),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(sa.ForeignKey("merchants.id", ondelete="CASCADE"))
    span: Mapped[str] = mapped_column(sa.String(8))
    starts: Mapped[date]
    category: Mapped[str] = mapped_column(sa.String(32))
    state: Mapped[str] = mapped_column(sa.String(32))
    count: Mapped[int]


# --- Search and the attention list over the mirror ------------------------------------------
# What the attention list counts (`portal.payments.rules.attention`): undecided transactions,
# operations by status and by money state, and those with late transactions; each
# index holds every column its count reads and the order it lists (the rows' `record` is large),
# and the ids it lists (SQLite's indexes hold them anyway; PostgreSQL's carry them, migration
# 0030).
sa.Index(
    "ix_mirrored_operations_merchant_status",
    MirroredOperation.merchant_id,
    MirroredOperation.status,
    MirroredOperation.updated_at,
    MirroredOperation.operation_id,
    MirroredOperation.amount_paid,
    postgresql_include=["id"],
)
sa.Index(
    "ix_mirrored_operations_merchant_state",
    MirroredOperation.merchant_id,
    MirroredOperation.state,
    MirroredOperation.status,
    MirroredOperation.updated_at,
    MirroredOperation.operation_id,
    MirroredOperation.amount_paid,
    postgresql_include=["id"],
)
# The attention list's payments and differences, newest first (migration 0035): each group's
# rows alone, in the order it lists them, so that its newest are the first entries read and not
# the end of a sort of the whole group. The states are those of the list's
# `PAID_SHORT_OR_UNCONFIRMED` and `WRONG_AMOUNT` (`operation_money.State`), which it writes as
# literals: a database uses a partial index only for a query whose conditions imply it.
_PAID_SHORT_OR_UNCONFIRMED = sa.and_(
    MirroredOperation.status == "new",
    MirroredOperation.state.in_(("partly_paid", "paid_unconfirmed")),
)
_WRONG_AMOUNT = MirroredOperation.state.in_(("paid_late", "underpaid", "overpaid"))
sa.Index(
    "ix_mirrored_operations_merchant_payment",
    MirroredOperation.merchant_id,
    MirroredOperation.updated_at,
    MirroredOperation.operation_id,
    MirroredOperation.amount_paid,
    MirroredOperation.state,
    MirroredOperation.status,
    postgresql_include=["id"],
    sqlite_where=_PAID_SHORT_OR_UNCONFIRMED,
    postgresql_where=_PAID_SHORT_OR_UNCONFIRMED,
)
sa.Index(
    "ix_mirrored_operations_merchant_difference",
    MirroredOperation.merchant_id,
    MirroredOperation.updated_at,
    MirroredOperation.status,
    MirroredOperation.operation_id,
    MirroredOperation.amount_paid,
    MirroredOperation.state,
    postgresql_include=["id"],
    sqlite_where=_WRONG_AMOUNT,
    postgresql_where=_WRONG_AMOUNT,
)
sa.Index(
    "ix_mirrored_operations_merchant_late",
    MirroredOperation.merchant_id,
    MirroredOperation.operation_id,
    sqlite_where=MirroredOperation.late_transactions.is_not(None),
    postgresql_where=MirroredOperation.late_transactions.is_not(None),
)
# The same operations by their newest late transaction (migration 0036): the attention list's
# newest late transactions are among those of its first few.
sa.Index(
    "ix_mirrored_operations_merchant_late_since",
    MirroredOperation.merchant_id,
    MirroredOperation.late_since,
    MirroredOperation.operation_id,
    postgresql_include=["id"],
    sqlite_where=MirroredOperation.late_transactions.is_not(None),
    postgresql_where=MirroredOperation.late_transactions.is_not(None),
)
# A merchant's transactions newest first (migration 0038), as search reads them first.
sa.Index(
    "ix_mirrored_transactions_merchant_created",
    MirroredTransaction.merchant_id,
    MirroredTransaction.created_at,
    MirroredTransaction.id,
)
sa.Index(
    "ix_mirrored_transactions_merchant_status",
    MirroredTransaction.merchant_id,
    MirroredTransaction.status,
    MirroredTransaction.linked,
    MirroredTransaction.created_at,  # the undecided transactions' order (migration 0035)
    MirroredTransaction.operation_id,
    postgresql_include=["id"],
)
sa.Index(
    "ix_mirrored_transactions_merchant_operation_status",
    MirroredTransaction.merchant_id,
    MirroredTransaction.operation_id,
    MirroredTransaction.status,
    MirroredTransaction.linked,
    MirroredTransaction.created_at,  # the late transactions' order (migration 0033)
    postgresql_include=["id"],
)
# Migration 0014 adds, on SQLite, FTS5 tables (trigram) over the searched columns, kept by
# triggers, and on PostgreSQL trigram indexes of lower-cased columns; migration 0034, on SQLite,
# the indexes of the order of what they find: no models, so a comparison of the models with the
# schema leaves them out.
SEARCH_INDEX_TABLES = ("mirrored_operations_search", "mirrored_transactions_search")
SEARCH_INDEX_SUFFIXES = ("_trigram", "_search_order")


def is_modelled(name: str | None, type_: str, _parent_names: object) -> bool:
    """For Alembic's `include_name`: False for the search's own indexes (migrations 0014 and
    0034: the FTS5 tables with their shadow tables, the trigram and order indexes)."""
    if name is None:
        return True
    if type_ == "table":
        return not name.startswith(SEARCH_INDEX_TABLES)
    return not (type_ == "index" and name.endswith(SEARCH_INDEX_SUFFIXES))


# The models this module's relationships name, imported once its own are defined (they import
# this module in turn): SQLAlchemy resolves the names when the first query configures the mappers.
from portal.identity.models import Merchant  # noqa: E402

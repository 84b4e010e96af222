"""Revenue in one currency: the merchant's reporting currency, the rates the mirror recorded, the
ledger's first movements, and the operation of each cross exchange made through the portal.

- `merchants.reporting_currency`: the currency every value is given in (USD by default).
- `rate_records`: `/v1/rates` as the mirror read it, a row each time a rate changed, with the
  span over which the same rates were read again (`recorded_at` to `last_seen_at`).
- `ledger_entries`: each movement of a wallet, booked once under its `key`, with its value in
  the reporting currency at the rate of its time (kept: a later rate changes nothing).
- `cross_exchange_references.operation_id`: the operation that waits for the sold currency; its
  money is the exchange's, not a sale.
- `withdrawal_limits`: the daily limit an owner set for withdrawals from a wallet (the API tells
  none of its own).
- `statement_choices`, `statement_mails`: how often a user gets the statement by mail, and each
  period's mail queued (once per user and period); `mail_messages.stop_url`: the link a mail's
  `List-Unsubscribe` header names; `mail_messages.attachment` and `attachment_name`: a file the
  mail carries (the statement's spreadsheet), dropped once sent.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op


revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def _merchant() -> sa.Column:
    return sa.Column(
        "merchant_id",
        sa.Integer(),
        sa.ForeignKey("merchants.id", ondelete="CASCADE"),
        nullable=False,
    )


def upgrade():
    op.add_column(
        "merchants",
        sa.Column("reporting_currency", sa.String(16), nullable=False, server_default="USD"),
    )
    op.add_column("cross_exchange_references", sa.Column("operation_id", sa.String(64)))
    op.create_table(
        "rate_records",
        sa.Column("id", sa.Integer(), primary_key=True),
        _merchant(),
        sa.Column("connection_generation", sa.Integer(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rates", sa.JSON(), nullable=False),
    )
    op.create_index(
        "ix_rate_records_merchant_recorded",
        "rate_records",
        ["merchant_id", "connection_generation", "recorded_at"],
    )
    op.create_table(
        "ledger_entries",
        sa.Column("id", sa.Integer(), primary_key=True),
        _merchant(),
        sa.Column("connection_generation", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("currency", sa.String(16), nullable=False),
        sa.Column("amount", sa.String(64), nullable=False),
        sa.Column("operation_id", sa.String(64)),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("api_at", sa.DateTime(timezone=True)),
        sa.Column("priced_in", sa.String(16)),
        sa.Column("operation_rate", sa.String(64)),
        sa.Column("value", sa.String(64)),
        sa.Column("value_currency", sa.String(16)),
        sa.Column("rate", sa.String(64)),
        sa.Column("rate_at", sa.DateTime(timezone=True)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("merchant_id", "connection_generation", "key"),
    )
    op.create_index(
        "ix_ledger_entries_merchant_kind_occurred",
        "ledger_entries",
        ["merchant_id", "connection_generation", "kind", "occurred_at"],
    )
    op.create_index(
        "ix_ledger_entries_merchant_operation",
        "ledger_entries",
        ["merchant_id", "connection_generation", "operation_id"],
    )
    op.create_table(
        "withdrawal_limits",
        sa.Column("id", sa.Integer(), primary_key=True),
        _merchant(),
        sa.Column("currency", sa.String(16), nullable=False),
        sa.Column("daily_limit", sa.String(64), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("merchant_id", "currency"),
    )
    op.add_column("mail_messages", sa.Column("stop_url", sa.String(500)))
    op.add_column("mail_messages", sa.Column("attachment_name", sa.String(255)))
    op.add_column("mail_messages", sa.Column("attachment", sa.LargeBinary()))
    op.create_table(
        "statement_choices",
        _user(primary_key=True),
        sa.Column(
            "frequency",
            sa.Enum(
                "none",
                "weekly",
                "monthly",
                name="statementfrequency",
                native_enum=False,
                length=20,
                create_constraint=True,
            ),
            nullable=False,
        ),
        sa.Column("chosen_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "statement_mails",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user(),
        sa.Column("period_start", sa.Date(), nullable=False),
        sa.Column("period_end", sa.Date(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("user_id", "period_start", "period_end"),
    )


def _user(*, primary_key: bool = False) -> sa.Column:
    return sa.Column(
        "user_id",
        sa.Integer(),
        sa.ForeignKey("users.id", ondelete="CASCADE"),
        primary_key=primary_key,
        nullable=False,
    )


def downgrade():
    op.drop_table("statement_mails")
    op.drop_table("statement_choices")
    op.drop_column("mail_messages", "attachment")
    op.drop_column("mail_messages", "attachment_name")
    op.drop_column("mail_messages", "stop_url")
    op.drop_table("withdrawal_limits")
    op.drop_table("ledger_entries")
    op.drop_table("rate_records")
    op.drop_column("cross_exchange_references", "operation_id")
    op.drop_column("merchants", "reporting_currency")

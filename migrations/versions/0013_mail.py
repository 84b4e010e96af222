"""E-mail: each user's choices of events, the outbox, its cursors, one-time links and reset
requests.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def _user(*, primary_key: bool = False, nullable: bool = True) -> sa.Column:
    return sa.Column(
        "user_id",
        sa.Integer(),
        sa.ForeignKey("users.id", ondelete="CASCADE"),
        primary_key=primary_key,
        nullable=nullable,
    )


def upgrade():
    op.create_table(
        "mail_choices",
        _user(primary_key=True, nullable=False),
        sa.Column("event_types", sa.JSON(), nullable=False),
    )
    op.create_table(
        "mail_cursors",
        sa.Column(
            "merchant_id",
            sa.Integer(),
            sa.ForeignKey("merchants.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("last_event_id", sa.Integer(), nullable=False),
    )
    op.create_table(
        "mail_messages",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user(),
        sa.Column("event_id", sa.Integer(), sa.ForeignKey("events.id", ondelete="CASCADE")),
        sa.Column("to_address", sa.String(254), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("body", sa.Text()),
        sa.Column(
            "state",
            sa.Enum("queued", "sent", "failed", name="mailstate", native_enum=False, length=20,
                    create_constraint=True),
            nullable=False,
        ),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True)),
        sa.Column("last_error", sa.Text()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True)),
        sa.UniqueConstraint("event_id", "user_id"),
    )
    op.create_index("ix_mail_messages_due", "mail_messages", ["state", "next_attempt_at"])
    op.create_table(
        "one_time_links",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column(
            "purpose",
            sa.Enum("invite", "reset", name="linkpurpose", native_enum=False, length=20,
                    create_constraint=True),
            nullable=False,
        ),
        _user(nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_one_time_links_user_id", "one_time_links", ["user_id"])
    op.create_table(
        "reset_requests",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade():
    op.drop_table("reset_requests")
    op.drop_table("one_time_links")
    op.drop_table("mail_messages")
    op.drop_table("mail_cursors")
    op.drop_table("mail_choices")

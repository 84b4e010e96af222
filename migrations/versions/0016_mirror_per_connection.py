"""The mirror belongs to one API connection; a sync that fails waits before it tries again.

A merchant that connects to another account (a new base URL, environment or token) starts a
new mirror: `api_connections.generation` counts the merchant's connections, and each event
names the generation it was seen under. An event's `dedup_key` now begins with that
generation (`1:operation:42:created`), so the same change of two accounts is two events, and
the unique (merchant, dedup_key) holds per connection. Events written before this migration
belong to the merchant's connection of the day, generation 1.

`mirror_states.failures` and `retry_at`: a merchant whose syncs fail is tried again after a
growing pause, after the merchants whose syncs work, instead of first on every tick.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op


revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

GENERATION_TEXT = "CAST(connection_generation AS VARCHAR(20))"


def upgrade():
    op.add_column(
        "api_connections",
        sa.Column("generation", sa.Integer(), nullable=False, server_default="1"),
    )
    op.add_column(
        "events",
        sa.Column("connection_generation", sa.Integer(), nullable=False, server_default="0"),
    )
    op.execute(
        "UPDATE events SET connection_generation = 1 "
        "WHERE merchant_id IN (SELECT merchant_id FROM api_connections)"
    )
    op.execute(f"UPDATE events SET dedup_key = {GENERATION_TEXT} || ':' || dedup_key")  # noqa: S608
    op.add_column(
        "mirror_states",
        sa.Column("failures", sa.Integer(), nullable=False, server_default="0"),
    )
    op.add_column("mirror_states", sa.Column("retry_at", sa.DateTime(timezone=True)))


def downgrade():
    # The current connection's keys lose their generation; an earlier connection's keep it, so
    # that no two keys of a merchant become one.
    op.execute(
        f"UPDATE events SET dedup_key = substr(dedup_key, length({GENERATION_TEXT}) + 2) "  # noqa: S608
        "WHERE connection_generation = COALESCE((SELECT generation FROM api_connections "
        "WHERE api_connections.merchant_id = events.merchant_id), 0)"
    )
    op.drop_column("mirror_states", "retry_at")
    op.drop_column("mirror_states", "failures")
    op.drop_column("events", "connection_generation")
    op.drop_column("api_connections", "generation")

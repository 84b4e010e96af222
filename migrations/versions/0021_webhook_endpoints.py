"""Webhooks any shop can verify with a Standard Webhooks library; several endpoints per merchant;
what each attempt sent and got back.

- `webhook_endpoints.merchant_id` is no longer unique: a merchant keeps up to 10 endpoints, the
  one of today among them with its URL, types, secrets and deliveries as they are.
- `webhook_endpoints.legacy_secret`: the endpoint's secret is of the old form (`whsec_` and
  URL-safe text, which the libraries decode to another key or not at all). Every endpoint of
  today is marked; the worker rotates each such secret (the old one signs beside the new for
  24 hours) and mails the merchant's owners.
- `webhook_attempts.request_headers`, `request_body`, `response_body`: what was sent (the
  signatures masked) and the start of the shop's answer, kept 30 days.
- `webhook_replays`: an owner's request to send an endpoint a period's events again, which the
  worker carries out once (`done_at`).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

# The name PostgreSQL gave the unique constraint of 0012, given to SQLite's unnamed one as well.
UNIQUE = "webhook_endpoints_merchant_id_key"
NAMES = {"uq": "%(table_name)s_%(column_0_name)s_key"}


def upgrade():
    with op.batch_alter_table("webhook_endpoints", naming_convention=NAMES) as batch:
        batch.drop_constraint(UNIQUE, type_="unique")
        batch.add_column(
            sa.Column("legacy_secret", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.create_index("ix_webhook_endpoints_merchant", ["merchant_id"])
    op.execute(sa.text("UPDATE webhook_endpoints SET legacy_secret = true"))
    with op.batch_alter_table("webhook_attempts") as batch:
        batch.add_column(sa.Column("request_headers", sa.JSON()))
        batch.add_column(sa.Column("request_body", sa.Text()))
        batch.add_column(sa.Column("response_body", sa.Text()))
        batch.create_index("ix_webhook_attempts_started", ["started_at"])
    op.create_table(
        "webhook_replays",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "endpoint_id",
            sa.Integer(),
            sa.ForeignKey("webhook_endpoints.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("period_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("period_end", sa.DateTime(timezone=True), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("done_at", sa.DateTime(timezone=True)),
        sa.Column("events", sa.Integer()),
    )
    op.create_index("ix_webhook_replays_endpoint", "webhook_replays", ["endpoint_id"])


def downgrade():
    op.drop_index("ix_webhook_replays_endpoint", "webhook_replays")
    op.drop_table("webhook_replays")
    with op.batch_alter_table("webhook_attempts") as batch:
        batch.drop_index("ix_webhook_attempts_started")
        batch.drop_column("response_body")
        batch.drop_column("request_body")
        batch.drop_column("request_headers")
    op.execute(
        sa.text(
            "DELETE FROM webhook_endpoints WHERE id NOT IN "
            "(SELECT MIN(id) FROM webhook_endpoints GROUP BY merchant_id)"
        )
    )
    with op.batch_alter_table("webhook_endpoints") as batch:
        batch.drop_index("ix_webhook_endpoints_merchant")
        batch.drop_column("legacy_secret")
        batch.create_unique_constraint(UNIQUE, ["merchant_id"])

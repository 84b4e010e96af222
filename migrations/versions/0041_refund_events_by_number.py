"""Refund events name a refund by its operation and its `number` among the operation's refunds,
no longer by the portal's own id, which counts every merchant's refunds: the events stored
before are rewritten, so that a retry, a resend or a replay of one sends what its schema says.

Revision ID: 0041
Revises: 0040
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0041"
down_revision = "0040"
branch_labels = None
depends_on = None

events = sa.table(
    "events", sa.column("id", sa.Integer), sa.column("type", sa.String), sa.column("data", sa.JSON)
)
refunds = sa.table("refunds", sa.column("id", sa.Integer), sa.column("number", sa.Integer))


def upgrade():
    connection = op.get_bind()
    numbers = dict(connection.execute(sa.select(refunds.c.id, refunds.c.number)).all())
    stored = connection.execute(
        sa.select(events.c.id, events.c.data).where(events.c.type.like("refund.%"))
    ).all()
    for event_id, data in stored:
        if "id" not in data:
            continue
        rewritten = {key: value for key, value in data.items() if key != "id"}
        rewritten["number"] = numbers.get(data["id"], 1)
        connection.execute(
            sa.update(events).where(events.c.id == event_id).values(data=rewritten)
        )


def downgrade():
    pass  # the portal's own ids are not sent again

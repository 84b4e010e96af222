"""An owner stops being one only as a control no owner relaxes alone: another owner's change
of their role waits (`control_changes.kind` `not_owner`), as making someone an owner does.

Revision ID: 0039
Revises: 0038
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None

OLD_KINDS = ("limits", "own_limits", "owner", "cooling_off")
NEW_KINDS = (*OLD_KINDS, "not_owner")


def _kinds(values):
    return sa.Enum(
        *values, name="controlkind", native_enum=False, create_constraint=True, length=20
    )


def upgrade():
    with op.batch_alter_table("control_changes") as batch:
        batch.alter_column(
            "kind", existing_type=_kinds(OLD_KINDS), type_=_kinds(NEW_KINDS), nullable=False
        )


def downgrade():
    op.execute(sa.text("DELETE FROM control_changes WHERE kind = 'not_owner'"))
    with op.batch_alter_table("control_changes") as batch:
        batch.alter_column(
            "kind", existing_type=_kinds(NEW_KINDS), type_=_kinds(OLD_KINDS), nullable=False
        )

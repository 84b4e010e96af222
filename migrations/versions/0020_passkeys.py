"""Passkeys: WebAuthn credentials as a second factor, and the challenges they answer.

- `passkeys`: each user's credentials (id, public key, sign count, name, last use).
- `passkey_challenges`: a challenge given for one ceremony and action, deleted when used.
- `merchants.require_passkey_for_approvals`: the owners' setting that approvals take a passkey.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def _user() -> sa.Column:
    return sa.Column(
        "user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    )


def upgrade() -> None:
    op.create_table(
        "passkeys",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user(),
        sa.Column("credential_id", sa.String(1400), nullable=False, unique=True),
        sa.Column("public_key", sa.LargeBinary(), nullable=False),
        sa.Column("sign_count", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_passkeys_user_id", "passkeys", ["user_id"])
    op.create_table(
        "passkey_challenges",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user(),
        sa.Column("challenge", sa.String(64), nullable=False, unique=True),
        sa.Column("action", sa.String(300), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_passkey_challenges_user_id", "passkey_challenges", ["user_id"])
    with op.batch_alter_table("merchants") as batch:
        batch.add_column(
            sa.Column(
                "require_passkey_for_approvals",
                sa.Boolean(),
                nullable=False,
                server_default=sa.false(),
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("merchants") as batch:
        batch.drop_column("require_passkey_for_approvals")
    op.drop_table("passkey_challenges")
    op.drop_table("passkeys")

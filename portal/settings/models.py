"""How a merchant reaches the API: its connection, tokens encrypted."""

from __future__ import annotations

import enum
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column, relationship

from portal.database import UtcDateTime, enum_column, utcnow
from portal.extensions import Model


class Environment(enum.StrEnum):
    """The API environment: the sandbox puts `/sandbox` before `/v1`."""

    SANDBOX = "sandbox"
    PRODUCTION = "production"

    @property
    def label(self) -> str:
        return self.value.capitalize()


class ApiConnection(Model):
    """How a merchant reaches the Merchant API; tokens are stored encrypted, never in clear."""

    __tablename__ = "api_connections"

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), unique=True
    )
    base_url: Mapped[str] = mapped_column(sa.String(2048))
    environment: Mapped[Environment] = mapped_column(enum_column(Environment))
    token_encrypted: Mapped[str] = mapped_column(sa.Text)
    company_token_encrypted: Mapped[str | None] = mapped_column(sa.Text)
    # Which of the merchant's connections this is: one more each time the base URL, the
    # environment or the token changes (another account, perhaps). The mirror and its events
    # belong to one generation: a new one starts a new mirror (`portal.settings.rules.connection`).
    generation: Mapped[int] = mapped_column(default=1, server_default="1")
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)

    merchant: Mapped[Merchant] = relationship(back_populates="api_connection")


# The models this module's relationships name, imported once its own are defined (they import
# this module in turn): SQLAlchemy resolves the names when the first query configures the mappers.
from portal.identity.models import Merchant  # noqa: E402

"""The portal's own records: merchants, their users and sessions, and their API credentials."""

from __future__ import annotations

import enum
from datetime import UTC, datetime

import sqlalchemy as sa
from flask_login import UserMixin
from sqlalchemy.orm import Mapped, mapped_column, relationship
from werkzeug.security import check_password_hash, generate_password_hash

from portal.extensions import db


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


class UtcDateTime(sa.TypeDecorator):
    """A timestamp stored in UTC that always comes back timezone-aware (SQLite drops the zone)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Role(enum.StrEnum):
    """What a user may do in the portal (design section 1)."""

    OWNER = "owner"
    OPERATOR = "operator"
    ACCOUNTANT = "accountant"

    @property
    def label(self) -> str:
        return self.value.capitalize()


class Environment(enum.StrEnum):
    """The API environment: the sandbox puts `/sandbox` before `/v1`."""

    SANDBOX = "sandbox"
    PRODUCTION = "production"

    @property
    def label(self) -> str:
        return self.value.capitalize()


def _enum_column(enum_class: type[enum.StrEnum]) -> sa.Enum:
    return sa.Enum(
        enum_class,
        native_enum=False,
        create_constraint=True,
        length=20,
        values_callable=lambda members: [member.value for member in members],
    )


class Merchant(db.Model):
    """A merchant company: the unit that owns users and one API connection."""

    __tablename__ = "merchants"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(120), unique=True)
    # What customers see on the public checkout page, and the only place it sends them back to.
    display_name: Mapped[str | None] = mapped_column(sa.String(120))
    shop_url: Mapped[str | None] = mapped_column(sa.String(2048))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    users: Mapped[list[User]] = relationship(
        back_populates="merchant", cascade="all, delete-orphan", order_by="User.email"
    )
    api_connection: Mapped[ApiConnection | None] = relationship(
        back_populates="merchant", cascade="all, delete-orphan"
    )


class User(UserMixin, db.Model):
    """A person who signs in; belongs to exactly one merchant."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), index=True
    )
    email: Mapped[str] = mapped_column(sa.String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(sa.String(256))
    role: Mapped[Role] = mapped_column(_enum_column(Role))
    # An IANA zone name (`Europe/Berlin`) in which this person reads timestamps.
    time_zone: Mapped[str] = mapped_column(sa.String(64), default="UTC", server_default="UTC")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    merchant: Mapped[Merchant] = relationship(back_populates="users")
    sessions: Mapped[list[UserSession]] = relationship(
        back_populates="user", cascade="all, delete-orphan", passive_deletes=True
    )

    # The signed-in session this object was loaded for; Flask-Login keeps it in the cookie.
    session_key = None

    def set_password(self, password: str) -> None:
        self.password_hash = generate_password_hash(password)

    def check_password(self, password: str) -> bool:
        return check_password_hash(self.password_hash, password)

    def get_id(self) -> str | None:
        """Flask-Login stores the session's key, not the user id, so that sign-out revokes it."""
        return self.session_key


class UserSession(db.Model):
    """A signed-in browser session; deleting the row signs that browser out."""

    __tablename__ = "user_sessions"

    key_hash: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    user: Mapped[User] = relationship(back_populates="sessions")


class ApiConnection(db.Model):
    """How a merchant reaches the Merchant API; tokens are stored encrypted, never in clear."""

    __tablename__ = "api_connections"

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), unique=True
    )
    base_url: Mapped[str] = mapped_column(sa.String(2048))
    environment: Mapped[Environment] = mapped_column(_enum_column(Environment))
    token_encrypted: Mapped[str] = mapped_column(sa.Text)
    company_token_encrypted: Mapped[str | None] = mapped_column(sa.Text)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)

    merchant: Mapped[Merchant] = relationship(back_populates="api_connection")


class CheckoutLink(db.Model):
    """The public checkout page's reference to one operation: a random token, nothing readable.

    Created before the operation (its URL is the operation's `redirect_url`); the operation id is
    filled in once the API has created it.
    """

    __tablename__ = "checkout_links"

    id: Mapped[int] = mapped_column(primary_key=True)
    token: Mapped[str] = mapped_column(sa.String(64), unique=True)
    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), index=True
    )
    operation_id: Mapped[str | None] = mapped_column(sa.String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    merchant: Mapped[Merchant] = relationship()

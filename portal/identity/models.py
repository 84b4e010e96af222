"""Who signs in: merchants, their users, sessions, recovery codes, one-time links and the audit
log."""

from __future__ import annotations

import enum
import hashlib
from datetime import datetime
from decimal import Decimal

import sqlalchemy as sa
from flask import current_app
from flask_login import UserMixin
from sqlalchemy.orm import Mapped, mapped_column, relationship
from werkzeug.security import check_password_hash, generate_password_hash

from portal.database import DecimalText, UtcDateTime, enum_column, utcnow
from portal.extensions import Model


class Role(enum.StrEnum):
    """What a user may do in the portal (docs/money-movements.md, "Who may do what")."""

    OWNER = "owner"
    OPERATOR = "operator"
    ACCOUNTANT = "accountant"

    @property
    def label(self) -> str:
        return self.value.capitalize()


class Merchant(Model):
    """A merchant company: the unit that owns users and one API connection."""

    __tablename__ = "merchants"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(120), unique=True)
    # What customers see on the public checkout page, and the only place it sends them back to.
    display_name: Mapped[str | None] = mapped_column(sa.String(120))
    shop_url: Mapped[str | None] = mapped_column(sa.String(2048))
    support_email: Mapped[str | None] = mapped_column(sa.String(254))
    # Every user must have two-factor sign-in on; the unenrolled can open only the enrolment.
    require_two_factor: Mapped[bool] = mapped_column(default=False, server_default=sa.false())
    # Approvals are to be confirmed with a passkey only (no code that a phishing page can relay).
    require_passkey_for_approvals: Mapped[bool] = mapped_column(
        default=False, server_default=sa.false()
    )
    # A difference between received and due of at most this share of the due counts as none
    # (`portal.payments.rules.operation_money`): a customer's wallet that rounds is not underpaid.
    payment_tolerance_percent: Mapped[Decimal] = mapped_column(
        DecimalText, default=Decimal(0), server_default="0"
    )
    # The currency every value of the dashboard, exports and the ledger is given in
    # (`portal.money.rules.reporting`).
    reporting_currency: Mapped[str] = mapped_column(
        sa.String(16), default="USD", server_default="USD"
    )
    # How long a refund's claim link waits for the customer's address (set by owners).
    refund_link_days: Mapped[int] = mapped_column(default=14, server_default="14")
    # The most money may leave in one withdrawal, refund or voucher, and per UTC day, in the
    # reporting currency, before another owner must approve (`portal.money.rules.limits`).
    limit_per_withdrawal: Mapped[Decimal | None] = mapped_column(DecimalText)
    limit_per_day: Mapped[Decimal | None] = mapped_column(DecimalText)
    # Hours before a new address of the address book may be used (None: the
    # `PORTAL_ADDRESS_COOLING_OFF_HOURS` setting); owners change it (`portal.money.rules.controls`).
    address_cooling_off_hours: Mapped[Decimal | None] = mapped_column(DecimalText)
    # How many approvals wait (`portal.money.rules.approvals` keeps it in the same transactions
    # as the approvals): the menu's count comes with the signed-in session's one query.
    approvals_waiting: Mapped[int] = mapped_column(default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    users: Mapped[list[User]] = relationship(
        back_populates="merchant", cascade="all, delete-orphan", order_by="User.email"
    )
    api_connection: Mapped[ApiConnection | None] = relationship(
        back_populates="merchant", cascade="all, delete-orphan"
    )
    # Read with the signed-in session (the menu's count follows the last sync); the mirror's
    # sync writes it.
    mirror_state: Mapped[MirrorState | None] = relationship(viewonly=True)

    @property
    def last_synced_at(self) -> datetime | None:
        """When the mirror last finished a sync of this merchant; None before its first one."""
        return self.mirror_state.last_sync_at if self.mirror_state else None


class User(UserMixin, Model):
    """A person who signs in; belongs to exactly one merchant."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE"), index=True
    )
    email: Mapped[str] = mapped_column(sa.String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(sa.String(256))
    role: Mapped[Role] = mapped_column(enum_column(Role))
    # An IANA zone name (`Europe/Berlin`) in which this person reads timestamps.
    time_zone: Mapped[str] = mapped_column(sa.String(64), default="UTC", server_default="UTC")
    # Two-factor sign-in (portal/identity/rules/two_factor.py): the TOTP secret, encrypted like
    # the API tokens, is kept from the start of enrolment; two-factor is on once
    # `totp_enabled_at` is set.
    totp_secret_encrypted: Mapped[str | None] = mapped_column(sa.Text)
    totp_enabled_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # The time step of the last code accepted: that code and older ones are refused (replay).
    totp_last_step: Mapped[int | None] = mapped_column(sa.BigInteger)
    # The password was typed by someone else (an owner adding the user or setting a new one):
    # the user chooses their own before anything else (`portal.web.access.enforce`).
    must_choose_password: Mapped[bool] = mapped_column(default=False, server_default=sa.false())
    # Asked once, after a sign-in, which zone to show times in (or chose one at /account).
    time_zone_asked: Mapped[bool] = mapped_column(default=False, server_default=sa.false())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    # When, and by which user, an owner was added or promoted through the portal (None: made
    # with `create-user` by whoever runs the servers, or never an owner): such an owner may not
    # approve for 24 hours, nor ever what the one who made them asked for.
    owner_since: Mapped[datetime | None] = mapped_column(UtcDateTime)
    owner_by_id: Mapped[int | None]

    merchant: Mapped[Merchant] = relationship(back_populates="users")
    sessions: Mapped[list[UserSession]] = relationship(
        back_populates="user", cascade="all, delete-orphan", passive_deletes=True
    )
    recovery_codes: Mapped[list[RecoveryCode]] = relationship(
        back_populates="user", cascade="all, delete-orphan", passive_deletes=True
    )
    passkeys: Mapped[list[Passkey]] = relationship(
        back_populates="user",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Passkey.created_at",
    )

    # The signed-in session this object was loaded for; Flask-Login keeps it in the cookie.
    # Not a column: SQLAlchemy is told to leave annotations without `Mapped[]` unmapped.
    __allow_unmapped__ = True
    session_key: str | None = None

    def set_password(self, password: str) -> None:
        """Hashed by PASSWORD_HASH_METHOD; each hash names its method, so any still checks."""
        method = current_app.config["PASSWORD_HASH_METHOD"]
        self.password_hash = generate_password_hash(password, method=method)

    def check_password(self, password: str) -> bool:
        return check_password_hash(self.password_hash, password)

    def get_id(self) -> str | None:
        """Flask-Login stores the session's key, not the user id, so that sign-out revokes it."""
        return self.session_key

    @property
    def two_factor_enabled(self) -> bool:
        """An authenticator app (TOTP) is set up."""
        return self.totp_enabled_at is not None

    @property
    def has_second_factor(self) -> bool:
        """An authenticator app or at least one passkey: sign-in and step-up ask for one."""
        return self.two_factor_enabled or bool(self.passkeys)

    @property
    def two_factor_due(self) -> bool:
        """The merchant requires two-factor sign-in and this user has not set it up yet."""
        return self.merchant.require_two_factor and not self.has_second_factor


class RecoveryCode(Model):
    """One unused recovery code of a user, as a SHA-256 hash; using it deletes the row.

    The codes are random with 79 bits, so a fast hash is enough (nothing to guess from it), and
    it lets a code be found, and consumed, with one DELETE.
    """

    __tablename__ = "recovery_codes"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), index=True)
    code_hash: Mapped[str] = mapped_column(sa.String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    user: Mapped[User] = relationship(back_populates="recovery_codes")


class Passkey(Model):
    """A WebAuthn credential of a user (`portal.identity.rules.passkeys`): its public key only;
    the private key never leaves the person's authenticator."""

    __tablename__ = "passkeys"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), index=True)
    credential_id: Mapped[str] = mapped_column(sa.String(1400), unique=True)  # base64url
    public_key: Mapped[bytes] = mapped_column(sa.LargeBinary)
    # The authenticator's counter: one that goes back is a cloned authenticator (or a replay).
    sign_count: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    name: Mapped[str] = mapped_column(sa.String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime)

    user: Mapped[User] = relationship(back_populates="passkeys")


class PasskeyChallenge(Model):
    """A challenge the portal gave a user's browser for one ceremony: registering a passkey,
    signing in, or confirming one action (`action`: the path the form posts to and its
    idempotency key). Using it deletes the row, so it confirms that action once, until it
    expires."""

    __tablename__ = "passkey_challenges"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), index=True)
    challenge: Mapped[str] = mapped_column(sa.String(64), unique=True)  # base64url
    action: Mapped[str] = mapped_column(sa.String(300))
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)


def session_key_hash(key: str) -> str:
    """How a session's key is stored: its SHA-256, never the key that the cookie carries."""
    return hashlib.sha256(key.encode()).hexdigest()


class UserSession(Model):
    """A signed-in browser session; deleting the row signs that browser out."""

    __tablename__ = "user_sessions"

    key_hash: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    user: Mapped[User] = relationship(back_populates="sessions")


class AuditEvent(Model):
    """One state-changing action, as `portal.identity.rules.audit.record` wrote it; never changed
    afterwards.

    `user_email` keeps who it was after the user is removed; `merchant_id` is null only for a
    failed sign-in with an email nobody has.
    """

    __tablename__ = "audit_events"
    __table_args__ = (sa.Index("ix_audit_events_merchant_created", "merchant_id", "created_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merchant_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("merchants.id", ondelete="CASCADE")
    )
    user_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    user_email: Mapped[str | None] = mapped_column(sa.String(254))
    action: Mapped[str] = mapped_column(sa.String(64))
    parameters: Mapped[dict] = mapped_column(sa.JSON)
    outcome: Mapped[str] = mapped_column(sa.String(16))
    error_code: Mapped[int | None]
    error_message: Mapped[str | None] = mapped_column(sa.Text)
    remote_address: Mapped[str | None] = mapped_column(sa.String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class LinkPurpose(enum.StrEnum):
    INVITE = "invite"
    RESET = "reset"


class OneTimeLink(Model):
    """A link mailed to a person that works once, until it expires: only its token's SHA-256 is
    kept, so the table alone opens no account."""

    __tablename__ = "one_time_links"

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    purpose: Mapped[LinkPurpose] = mapped_column(enum_column(LinkPurpose))
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), index=True)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)

    user: Mapped[User] = relationship()


class ResetRequest(Model):
    """A reset link asked for an address, until the worker looks it up and mails the link (or
    drops the request of an address nobody uses): the request itself does the same either way."""

    __tablename__ = "reset_requests"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(sa.String(254))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


# The models this module's relationships name, imported once its own are defined (they import
# this module in turn): SQLAlchemy resolves the names when the first query configures the mappers.
from portal.live.models import MirrorState  # noqa: E402
from portal.settings.models import ApiConnection  # noqa: E402

"""Merchants and their users, for the settings pages and the CLI alike, and the server-side
records of their signed-in sessions (so that a sign-out or an expiry really ends one)."""

from __future__ import annotations

import enum
import secrets
from datetime import timedelta
from email.utils import getaddresses
from typing import Literal, overload

import sqlalchemy as sa
from flask import current_app
from sqlalchemy.orm import joinedload, selectinload

from portal.database import utcnow
from portal.extensions import db
from portal.identity.models import (
    AuditEvent,
    Merchant,
    OneTimeLink,
    Role,
    User,
    UserSession,
    session_key_hash,
)

MIN_PASSWORD_LENGTH = 10
EMAIL_LENGTH = 254
NOT_IN_AN_ADDRESS = frozenset(',;<>()[]"\\:@')  # either side of the address's one `@`
LAST_SEEN_RESOLUTION = timedelta(minutes=1)
# Every signed-in page needs the user, the merchant, its API connection and its mirror's last
# sync (the menu's count): one query, not five, built once (`Session.get` would build it again
# for every request).
WITH_USER = (
    joinedload(UserSession.user)
    .joinedload(User.merchant)
    .options(joinedload(Merchant.api_connection), joinedload(Merchant.mirror_state))
)
SESSION_WITH_USER = (
    sa.select(UserSession)
    .options(WITH_USER)
    .where(UserSession.key_hash == sa.bindparam("key_hash"))
)


class Refusal(enum.Enum):
    """Why a change to users is refused."""

    NOT_AN_EMAIL = "not an email address"
    ALREADY_A_USER = "already a user of this merchant"
    # An address of another merchant's user: said in words that reveal nothing about it.
    CANNOT_ADD = "address cannot be added"
    OWN_ROLE = "own role"
    OWN_SIGN_IN = "own password, without the current one"
    OTHER_OWNER_SIGN_IN = "another owner's password or two-factor"
    REMOVE_SELF = "removing oneself"
    REMOVE_OWNER = "removing an owner"
    TOO_SHORT = "password too short"


class AccountError(Exception):
    """A change to users that is refused: `reason` says why, about the address `email` when
    the reason is about one."""

    def __init__(self, reason: Refusal, email: str | None = None) -> None:
        super().__init__(reason.value)
        self.reason = reason
        self.email = email


def looks_like_email(value: str) -> bool:
    """One plausible address and nothing else (the real check is that the person can sign in
    with it). A list of addresses would have a mail go to each of them: no separator (`,`, `;`,
    a space), no display name or comment (`<>`, `()`), no quoting, one `@`, no control
    character, and nothing that `email.utils` reads as more than this one address."""
    value = value.strip()
    local, _, domain = value.partition("@")
    return (
        bool(local)
        and "." in domain.strip(".")
        and len(value) <= EMAIL_LENGTH
        and not any(
            char.isspace() or not char.isprintable() or char in NOT_IN_AN_ADDRESS
            for char in local + domain
        )
        and getaddresses([value]) == [("", value)]
    )


def normalise_email(email: str) -> str:
    return email.strip().lower()


def find_user(email: str) -> User | None:
    return db.session.scalar(sa.select(User).where(User.email == normalise_email(email)))


def user_of(merchant_id: int, user_id: int) -> User | None:
    """The user with this id if they belong to the merchant; None for anyone else's."""
    return db.session.scalar(
        sa.select(User).where(User.id == user_id, User.merchant_id == merchant_id)
    )


def users_of(merchant: Merchant) -> list[User]:
    """The merchant's users by address, each with their passkeys (the users page shows whether
    each has a second factor): two queries, however many users there are."""
    return list(
        db.session.scalars(
            sa.select(User)
            .where(User.merchant_id == merchant.id)
            .options(selectinload(User.passkeys))
            .order_by(User.email)
        )
    )


def user_with_id(user_id: int) -> User | None:
    return db.session.get(User, user_id)


@overload
def merchant_named(name: str, *, create: Literal[True]) -> Merchant: ...
@overload
def merchant_named(name: str, *, create: bool = False) -> Merchant | None: ...
def merchant_named(name: str, *, create: bool = False) -> Merchant | None:
    """The merchant with this name; with `create`, a new one when there is none."""
    merchant = db.session.scalar(sa.select(Merchant).where(Merchant.name == name.strip()))
    if merchant is None and create:
        merchant = Merchant(name=name.strip())
        db.session.add(merchant)
    return merchant


def add_user(
    merchant: Merchant,
    email: str,
    role: Role,
    password: str,
    *,
    chosen_by_other: bool = False,
    by: User | None = None,
) -> User:
    """A new user of `merchant`; emails are unique across the portal (they are the login).

    An address of another merchant's user gets `CANNOT_ADD`, which names no merchant and does
    not say that the address is registered: one merchant must not learn who uses another.
    A password `chosen_by_other` (an owner typed it) is replaced by the user at first sign-in.
    An owner added `by` a user of the portal is held from approving for a while (`owner_since`).
    """
    if not looks_like_email(email):
        raise AccountError(Refusal.NOT_AN_EMAIL, email)
    _check_length(password)
    existing = find_user(email)
    if existing is not None and existing.merchant_id == merchant.id:
        raise AccountError(Refusal.ALREADY_A_USER, existing.email)
    if existing is not None:
        raise AccountError(Refusal.CANNOT_ADD, email)
    user = User(
        merchant=merchant,
        email=normalise_email(email),
        role=role,
        must_choose_password=chosen_by_other,
    )
    if role is Role.OWNER and by is not None:
        user.owner_since, user.owner_by_id = utcnow(), by.id
    user.set_password(password)
    db.session.add(user)
    db.session.commit()
    return user


def change_user(
    user: User, *, by: User, role: Role, password: str | None, turn_off_two_factor: bool = False
) -> None:
    """Change another user's role or password; a new password signs them out everywhere.

    One's own password is changed on the account page, which asks for the current one: a
    stolen owner session must not set a password here and lock the owner out. Another owner's
    password and two-factor (`turn_off_two_factor`: the caller turns it off once allowed) are
    theirs alone: one owner who set them could sign in as the other and approve their own
    withdrawal above the limits.
    """
    if user.id == by.id and role != user.role:
        raise AccountError(Refusal.OWN_ROLE)
    if user.id == by.id and password:
        raise AccountError(Refusal.OWN_SIGN_IN)
    if user.id != by.id and user.role is Role.OWNER and (password or turn_off_two_factor):
        raise AccountError(Refusal.OTHER_OWNER_SIGN_IN)
    if role is Role.OWNER and user.role is not Role.OWNER:
        user.owner_since, user.owner_by_id = utcnow(), by.id
    user.role = role
    if password:
        change_password(user, password, chosen_by_other=True)
    db.session.commit()


def _set_requirement(merchant: Merchant, requirement: str, required: bool) -> bool:
    """Set one of the merchant's `require_*` flags; whether that was a change."""
    if required == getattr(merchant, requirement):
        return False
    setattr(merchant, requirement, required)
    db.session.commit()
    return True


def require_two_factor(merchant: Merchant, required: bool) -> bool:
    """Require two-factor sign-in of every user of `merchant`, or no longer."""
    return _set_requirement(merchant, "require_two_factor", required)


def require_passkey_for_approvals(merchant: Merchant, required: bool) -> bool:
    """Approvals are to be confirmed with a passkey only, or no longer."""
    return _set_requirement(merchant, "require_passkey_for_approvals", required)


def set_time_zone(user: User, time_zone: str | None) -> None:
    """The zone `user`'s pages show times in (a name of the IANA database); None keeps it. Either
    way the user is not asked for one again."""
    if time_zone is not None:
        user.time_zone = time_zone
    user.time_zone_asked = True
    db.session.commit()


def change_password(
    user: User, password: str, *, keep_session: str | None = None, chosen_by_other: bool = False
) -> None:
    """A new password for `user`, who is signed out everywhere but in `keep_session` (the key of
    the session that changed its own password): no session started with the old one lives on.

    A password `chosen_by_other` (an owner's) is one the user must replace at the next sign-in;
    their own clears that.
    """
    _check_length(password)
    user.set_password(password)
    user.must_choose_password = chosen_by_other
    # A link mailed before (an invitation, a reset) would set another password over this one.
    db.session.execute(
        sa.update(OneTimeLink)
        .where(OneTimeLink.user_id == user.id, OneTimeLink.used_at.is_(None))
        .values(used_at=utcnow())
    )
    revoke_sessions(user, keep=keep_session)
    db.session.commit()


def remove_user(user: User, *, by: User) -> None:
    """Remove a user of the same merchant (and so every session of theirs). Never an owner:
    another owner stops being one only once that change is approved or its delay passed
    (`portal.money.rules.controls.demote_owner`), then is removed as staff are."""
    if user.id == by.id:
        raise AccountError(Refusal.REMOVE_SELF)
    if user.role is Role.OWNER:
        raise AccountError(Refusal.REMOVE_OWNER)
    db.session.delete(user)
    db.session.commit()


def revoke_sessions(user: User, *, keep: str | None = None) -> None:
    """Sign `user` out everywhere, but in the session whose key is `keep`."""
    doomed = UserSession.user_id == user.id
    if keep:
        doomed &= UserSession.key_hash != session_key_hash(keep)
    db.session.execute(sa.delete(UserSession).where(doomed))
    db.session.commit()


def open_session(user: User, sign_in: AuditEvent) -> str:
    """A new session of `user`, written with the audit log's `sign_in` event in one transaction
    (no session without its sign-in in the log); returns its key (only its hash is stored)."""
    key = secrets.token_urlsafe(32)
    db.session.add_all((UserSession(key_hash=session_key_hash(key), user=user), sign_in))
    db.session.commit()
    return key


def close_session(key: str) -> None:
    """Forget the session of this key, if it still exists."""
    db.session.execute(sa.delete(UserSession).where(UserSession.key_hash == session_key_hash(key)))
    db.session.commit()


def session_user(key: str) -> User | None:
    """The user of a live session; an expired session (too old, or idle too long) is deleted
    and gives nobody. The time it was last seen moves on at most once a minute."""
    record = db.session.scalar(SESSION_WITH_USER, {"key_hash": session_key_hash(key)})
    if record is None or record.user is None:
        return None
    now = utcnow()
    config = current_app.config
    lifetime = config["PERMANENT_SESSION_LIFETIME"]
    idle = timedelta(minutes=float(config["SESSION_IDLE_MINUTES"]))
    if now - record.created_at > lifetime or now - record.last_seen_at > idle:
        db.session.delete(record)
        db.session.commit()
        return None
    if now - record.last_seen_at > LAST_SEEN_RESOLUTION:
        record.last_seen_at = now
        db.session.commit()
    return record.user


def _check_length(password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise AccountError(Refusal.TOO_SHORT)


def lock_merchant(merchant_id: int) -> None:
    """Hold the merchant's row until this transaction ends (on PostgreSQL a row lock, on
    SQLite the database's write lock): for the few decisions that must see every commit made
    before them and none made during them."""
    db.session.execute(sa.update(Merchant).where(Merchant.id == merchant_id).values(id=Merchant.id))

"""Merchants and their users, for the settings pages and the CLI alike."""

from __future__ import annotations

import sqlalchemy as sa

from portal.extensions import db
from portal.models import Merchant, Role, User, UserSession

MIN_PASSWORD_LENGTH = 10
CANNOT_ADD = "This address cannot be added. Ask the person for another email address."


class AccountError(Exception):
    """A change to users that is refused; the message says why, for the person."""


def looks_like_email(value: str) -> bool:
    """A plausible address (the real check is that the person can sign in with it)."""
    local, _, domain = value.strip().rpartition("@")
    return bool(local) and "." in domain.strip(".") and not any(c.isspace() for c in value.strip())


def normalise_email(email: str) -> str:
    return email.strip().lower()


def find_user(email: str) -> User | None:
    return db.session.scalar(sa.select(User).where(User.email == normalise_email(email)))


def merchant_named(name: str, *, create: bool = False) -> Merchant | None:
    """The merchant with this name; with `create`, a new one when there is none."""
    merchant = db.session.scalar(sa.select(Merchant).where(Merchant.name == name.strip()))
    if merchant is None and create:
        merchant = Merchant(name=name.strip())
        db.session.add(merchant)
    return merchant


def add_user(merchant: Merchant, email: str, role: Role, password: str) -> User:
    """A new user of `merchant`; emails are unique across the portal (they are the login).

    An address of another merchant's user gets `CANNOT_ADD`, which names no merchant and does
    not say that the address is registered: one merchant must not learn who uses another.
    """
    if not looks_like_email(email):
        raise AccountError(f"{email!r} is not an email address.")
    if len(password) < MIN_PASSWORD_LENGTH:
        raise AccountError(f"The password needs at least {MIN_PASSWORD_LENGTH} characters.")
    existing = find_user(email)
    if existing is not None and existing.merchant_id == merchant.id:
        raise AccountError(f"{existing.email} is already a user of {merchant.name}.")
    if existing is not None:
        raise AccountError(CANNOT_ADD)
    user = User(merchant=merchant, email=normalise_email(email), role=role)
    user.set_password(password)
    db.session.add(user)
    db.session.commit()
    return user


def change_user(user: User, *, by: User, role: Role, password: str | None) -> None:
    """Change another user's role or password; a new password signs them out everywhere."""
    if user.id == by.id and role != user.role:
        raise AccountError("You cannot change your own role; another owner can.")
    user.role = role
    if password:
        user.set_password(password)
        if user.id != by.id:
            revoke_sessions(user)
    db.session.commit()


def remove_user(user: User, *, by: User) -> None:
    """Remove a user of the same merchant (and so every session of theirs)."""
    if user.id == by.id:
        raise AccountError("You cannot remove yourself; another owner can.")
    db.session.delete(user)
    db.session.commit()


def revoke_sessions(user: User) -> None:
    db.session.execute(sa.delete(UserSession).where(UserSession.user_id == user.id))

"""Invitations and password resets: a one-time link mailed to the person, who sets a password.

A link's token is `secrets.token_urlsafe(32)`; only its SHA-256 is stored and a link is found by
that hash. It works once (a conditional UPDATE of `used_at`) and until it expires: 7 days for an
invitation, 1 hour for a reset. Setting the password ends every session of the user.

Both mails go through the outbox (`portal.live.rules.mail`), sent at the worker's next tick: the
owner's request does not wait on the SMTP server, and a refusal is retried. A reset request
only writes down the address typed; the worker looks it up, so a request for an unknown address
does the same work as one for a known address, and neither the answer nor its time tells which
addresses have accounts.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta

import sqlalchemy as sa
from flask import current_app

from portal.database import utcnow
from portal.extensions import db, rows_changed
from portal.identity.models import LinkPurpose, Merchant, OneTimeLink, ResetRequest, Role, User
from portal.identity.rules import accounts, attempts, audit
from portal.live.rules import outbox

LIFETIMES = {LinkPurpose.INVITE: timedelta(days=7), LinkPurpose.RESET: timedelta(hours=1)}
PATHS = {LinkPurpose.INVITE: "/invite/", LinkPurpose.RESET: "/password/reset/"}


class LinkRefused(Exception):
    """The link is unknown, used, or expired: the pages say so in one sentence for all three."""


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _issue(user: User, purpose: LinkPurpose) -> str:
    """A new link for `user`; the raw token is returned, never stored. The caller commits."""
    token = secrets.token_urlsafe(32)
    db.session.add(
        OneTimeLink(
            token_hash=_hash(token),
            purpose=purpose,
            user_id=user.id,
            expires_at=utcnow() + LIFETIMES[purpose],
        )
    )
    return outbox.portal_link(PATHS[purpose] + token)


def invite(merchant: Merchant, email: str, role: Role, *, by: User) -> User:
    """Add a user with no password anyone knows, and mail them a link to set theirs.

    `accounts.AccountError` as for adding a user (a bad or taken address).
    """
    user = accounts.add_user(merchant, email, role, secrets.token_urlsafe(32), by=by)
    _mail_invitation(user, by)
    return user


def invite_again(user: User, *, by: User) -> None:
    """A new invitation link for a user still invited; the link mailed before no longer works.
    `LinkRefused` for a user who is not (or no longer) invited."""
    if invitation_expiry(user) is None:
        raise LinkRefused
    _void_invitations(user)
    _mail_invitation(user, by)


def revoke_invitation(user: User, *, by: User) -> None:
    """Take back the invitation of a user who never chose a password: the user is removed, and
    the link with them. `LinkRefused` for a user who is not (or no longer) invited."""
    if invitation_expiry(user) is None:
        raise LinkRefused
    accounts.remove_user(user, by=by)


def invitation_expiry(user: User) -> datetime | None:
    """When the invitation link of `user` expires (maybe already did), or None for a user who
    chose a password (or was added with one)."""
    return invitation_expiries([user.id]).get(user.id)


def invitation_expiries(user_ids: Iterable[int]) -> dict[int, datetime]:
    """The users still invited among `user_ids`, each with the expiry of their link: a link
    that was never used (choosing a password by any link uses all of a user's links)."""
    return dict(
        db.session.execute(
            sa.select(OneTimeLink.user_id, sa.func.max(OneTimeLink.expires_at))
            .where(
                OneTimeLink.user_id.in_(list(user_ids)),
                OneTimeLink.purpose == LinkPurpose.INVITE,
                OneTimeLink.used_at.is_(None),
            )
            .group_by(OneTimeLink.user_id)
        ).all()
    )


def _void_invitations(user: User) -> None:
    """Invitation links of `user` not used yet are deleted: they no longer open anything, and
    no longer make the user read as invited."""
    db.session.execute(
        sa.delete(OneTimeLink).where(
            OneTimeLink.user_id == user.id,
            OneTimeLink.purpose == LinkPurpose.INVITE,
            OneTimeLink.used_at.is_(None),
        )
    )


def _mail_invitation(user: User, by: User) -> None:
    url = _issue(user, LinkPurpose.INVITE)
    merchant = user.merchant
    outbox.queue(
        user.email,
        f"You are invited to {merchant.name} on the merchant portal",
        f"{by.email} invited you to the merchant portal of {merchant.name} as "
        f"{user.role.label.lower()}.\n\nChoose your password here (the link works once, for 7 "
        f"days; it signs you in as {user.email}):\n{url}\n",
        user_id=user.id,
    )
    db.session.commit()


def reset_limits(email: str, address: str | None) -> list[attempts.Limit]:
    """Requests for a reset link, per address asked for and per client address."""
    config = current_app.config
    return [
        attempts.limit(
            config["RESET_LINK_LIMIT_PER_ACCOUNT"], "reset", accounts.normalise_email(email)
        ),
        attempts.limit(config["RESET_LINK_LIMIT_PER_ADDRESS"], "reset-address", address or ""),
    ]


def request_reset(email: str, address: str | None) -> bool:
    """Note that a reset link was asked for `email`; False only when over the limits.

    The request writes the same row whether the address has an account or not; the worker's
    next tick looks the address up (`answer_reset_requests`), so neither the answer nor its
    time tells who has an account.
    """
    if attempts.attempt(reset_limits(email, address)) is None:
        return False
    db.session.add(ResetRequest(email=accounts.normalise_email(email)))
    db.session.commit()
    return True


def answer_reset_requests() -> None:
    """Mail a reset link for each request of a user's address; drop the others. Each request is
    claimed by deleting it, in the transaction that queues its mail: one worker answers it."""
    stale = utcnow() - LIFETIMES[LinkPurpose.RESET]
    for request_id, email, asked_at in db.session.execute(
        sa.select(ResetRequest.id, ResetRequest.email, ResetRequest.created_at).limit(100)
    ).all():
        if rows_changed(sa.delete(ResetRequest).where(ResetRequest.id == request_id)) != 1:
            db.session.rollback()
            continue
        user = accounts.find_user(email)
        if user is not None and asked_at > stale:
            url = _issue(user, LinkPurpose.RESET)
            outbox.queue(
                user.email,
                "Reset your password on the merchant portal",
                "Someone, probably you, asked to reset the password of "
                f"{user.email} on the merchant portal.\n\nChoose a new password here (the link "
                f"works once, for 1 hour):\n{url}\n\nSetting it signs you out everywhere. If you "
                "did not ask, ignore this mail: your password stays as it is.\n",
                user_id=user.id,
            )
        db.session.commit()


def _usable(token: str, purpose: LinkPurpose) -> sa.ColumnElement[bool]:
    return (
        (OneTimeLink.token_hash == _hash(token))
        & (OneTimeLink.purpose == purpose)
        & OneTimeLink.used_at.is_(None)
        & (OneTimeLink.expires_at > utcnow())
    )


def link_user(token: str, purpose: LinkPurpose) -> User:
    """The user of a usable link (the page that asks for the password); `LinkRefused` else."""
    link = db.session.scalar(sa.select(OneTimeLink).where(_usable(token, purpose)))
    if link is None:
        raise LinkRefused
    return link.user


def set_password(token: str, purpose: LinkPurpose, password: str) -> User:
    """Use the link: the user's password becomes `password`, every session and every other link
    of theirs ends, and the change is audited.

    `LinkRefused` for a link used meanwhile (only one use matches the UPDATE);
    `accounts.AccountError` for a password the rules refuse (the link stays usable).
    """
    user = link_user(token, purpose)
    used = rows_changed(
        sa.update(OneTimeLink).where(_usable(token, purpose)).values(used_at=utcnow())
    )
    if used != 1:
        db.session.rollback()
        raise LinkRefused
    try:
        # Commits; ends every session and every other link of the user (an earlier reset mail).
        accounts.change_password(user, password)
    except accounts.AccountError:
        db.session.rollback()  # the link stays usable
        raise
    audit.record("password.change", parameters={"by": f"{purpose.value} link"}, user=user)
    return user

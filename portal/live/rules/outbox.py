"""The outbox's door: whether e-mail is on, the links a mail holds, and adding a message.

Everything that mails someone adds a message here; `portal.live.rules.mail` sends the outbox.
"""

from __future__ import annotations

import sqlalchemy as sa
from flask import current_app

from portal.extensions import db
from portal.identity.models import Role, User
from portal.identity.rules.accounts import looks_like_email
from portal.live.models import MailMessage

DEFAULT_PUBLIC_URL = "http://127.0.0.1:5000"


def enabled() -> bool:
    """Whether e-mail is configured at all."""
    return bool(current_app.config.get("SMTP_URL"))


def portal_link(path: str) -> str:
    """An absolute URL of the portal for a mail: always from PORTAL_PUBLIC_URL, never from a
    request's Host header (which a stranger asking for a reset link could choose)."""
    base = current_app.config.get("PUBLIC_URL") or DEFAULT_PUBLIC_URL
    return base.rstrip("/") + path


def queue(
    to: str,
    subject: str,
    body: str,
    *,
    user_id: int | None = None,
    event_id: int | None = None,
    stop_url: str | None = None,
    attachment: tuple[str, bytes] | None = None,
) -> bool:
    """Add a message to the outbox, whether it was; the caller commits (with what the message
    is about). A message goes to one address: `to` holding a list, or anything else than one
    address (stored before addresses were checked so), is logged and not queued, since its
    link would reach every mailbox of the list. The log names the user, never the address.
    `stop_url`: the link that stops such mail in one click (the `List-Unsubscribe` header);
    `attachment`: a file's name and bytes, carried by the mail."""
    if not looks_like_email(to):
        whose = "a stored address" if user_id is None else f"the address of user {user_id}"
        current_app.logger.warning("Mail to %s not queued: not one email address.", whose)
        return False
    db.session.add(
        MailMessage(
            to_address=to,
            subject=subject,
            body=body,
            user_id=user_id,
            event_id=event_id,
            stop_url=stop_url,
            attachment_name=attachment[0] if attachment else None,
            attachment=attachment[1] if attachment else None,
        )
    )
    return True


def queue_to_owners(merchant_id: int, subject: str, body: str) -> None:
    """The same message to each owner of the merchant, for what every owner must know of (a
    control, an address or an endpoint changed); the caller commits. Nothing without e-mail."""
    if not enabled():
        return
    owners = db.session.scalars(
        sa.select(User).where(User.merchant_id == merchant_id, User.role == Role.OWNER)
    )
    for owner in owners:
        queue(owner.email, subject, body, user_id=owner.id)

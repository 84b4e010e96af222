"""The outbox's door: whether e-mail is on, the links a mail holds, and adding a message.

Everything that mails someone adds a message here; `portal.rules.mail` sends the outbox.
"""

from __future__ import annotations

from flask import current_app

from portal.extensions import db
from portal.models import MailMessage

DEFAULT_PUBLIC_URL = "http://127.0.0.1:5000"


def enabled() -> bool:
    """Whether e-mail is configured at all."""
    return bool(current_app.config.get("SMTP_URL"))


def portal_link(path: str) -> str:
    """An absolute URL of the portal for a mail: always from PORTAL_PUBLIC_URL, never from a
    request's Host header (which a stranger asking for a reset link could choose)."""
    base = current_app.config.get("PUBLIC_URL") or DEFAULT_PUBLIC_URL
    return base.rstrip("/") + path


def queue(to: str, subject: str, body: str, *, user_id: int | None = None) -> None:
    """Add a message to the outbox; the caller commits (with what the message is about)."""
    db.session.add(MailMessage(to_address=to, subject=subject, body=body, user_id=user_id))

"""References from the public checkout page to operations: random tokens kept in the database.

An operation created through the portal gets `redirect_url` = the checkout page of a fresh link,
so the customer's URL carries no operation id, merchant id or order number: only 32 random bytes.
The link is reserved before the API call (its URL goes into the request) and attached to the
operation's id once the API has answered.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from flask import current_app, request

from portal.extensions import db
from portal.models import CheckoutLink, Merchant, utcnow

TOKEN_BYTES = 32


def reserve_link(merchant: Merchant) -> CheckoutLink:
    """A new link for an operation about to be created; saved with the caller's commit."""
    link = CheckoutLink(token=secrets.token_urlsafe(TOKEN_BYTES), merchant=merchant)
    db.session.add(link)
    return link


def checkout_url(link: CheckoutLink) -> str:
    """The absolute URL customers return to: under PORTAL_PUBLIC_URL when it is set."""
    base = current_app.config.get("PUBLIC_URL") or request.url_root
    return f"{base.rstrip('/')}/checkout/{link.token}"


def attach(link: CheckoutLink, operation_id: str) -> None:
    """Record which operation the link shows, now that the API has created it."""
    link.operation_id = operation_id
    db.session.commit()


def find_link(token: str) -> CheckoutLink | None:
    """The link of a token taken from a URL, or None (any string, however odd, is safe here)."""
    if not token or len(token) > 64:
        return None
    return db.session.scalar(db.select(CheckoutLink).where(CheckoutLink.token == token))


def is_expired(link: CheckoutLink) -> bool:
    """Links work for PORTAL_CHECKOUT_LINK_DAYS days: long after any payment, not for ever."""
    lifetime = timedelta(days=float(current_app.config["CHECKOUT_LINK_DAYS"]))
    return link.created_at < utcnow() - lifetime

"""References from the public checkout page to operations: random tokens kept in the database.

An operation created through the portal gets `redirect_url` = the checkout page of a fresh link,
so the customer's URL carries no operation id, merchant id or order number: only 32 random bytes.
The link is reserved before the API call (its URL goes into the request) and attached to the
operation's id once the API has answered.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import timedelta

from flask import current_app

from portal.api import ApiFailure, ApiUnavailable, Operation
from portal.database import utcnow
from portal.extensions import db
from portal.identity.models import Merchant
from portal.payments.models import CheckoutLink
from portal.settings.rules.connection import ApiNotConnected, api_client_for

TOKEN_BYTES = 32


def reserve_link(merchant: Merchant, order_id: str) -> CheckoutLink:
    """A new link for an operation about to be created; saved with the caller's commit."""
    link = CheckoutLink(
        token=secrets.token_urlsafe(TOKEN_BYTES), merchant=merchant, order_id=order_id
    )
    db.session.add(link)
    return link


def url_under(base_url: str, link: CheckoutLink) -> str:
    """The absolute URL customers return to, under the portal's `base_url`."""
    return f"{base_url.rstrip('/')}/checkout/{link.token}"


def attach(link: CheckoutLink, operation: Operation) -> None:
    """Record which operation the link shows, now that the API has created it, and its amount:
    the customer's page shows that even when the API cannot be asked later."""
    link.operation_id = operation.id
    link.amount = operation.amount
    link.currency = operation.currency
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


def recovered(link: CheckoutLink) -> bool:
    """Whether the operation of a link whose creation went unanswered turned up after all; it
    is attached to the link and saved. False when it did not, or the API cannot be asked now.

    The operation is the one with the link's order number whose redirect URL ends with the
    link's token.
    """
    if not link.order_id:
        return False
    try:
        client = api_client_for(link.merchant)
        page = client.list_operations(order_id=[link.order_id], per_page=100)
    except (ApiFailure, ApiNotConnected):
        return False
    for operation in page.items:
        if (operation.redirect_url or "").endswith(f"/checkout/{link.token}"):
            attach(link, operation)
            return True
    return False


def created_with_link(link: CheckoutLink | None, create: Callable[[], Operation]) -> Operation:
    """The operation `create` makes, with `link` attached to it.

    The link is dropped when the request surely made nothing (a refusal, or a request that
    never left) and kept when its answer was lost: the operation may exist, its customer may
    come back to the link, and the link finds it by order number.
    """
    try:
        operation = create()
    except ApiFailure as failure:
        if link is not None and not (isinstance(failure, ApiUnavailable) and failure.request_sent):
            db.session.delete(link)
        raise
    if link is not None:
        attach(link, operation)
    return operation

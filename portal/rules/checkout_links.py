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

from portal.api import ApiFailure, ApiUnavailable, MerchantApiClient, Operation
from portal.extensions import db
from portal.models import CheckoutLink, Merchant, utcnow

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


def checkout_url(link: CheckoutLink) -> str:
    """`portal.web.public_urls.checkout_url`, where it belongs: here only until the operations
    views import it from there."""
    from portal.web import public_urls

    return public_urls.checkout_url(link)


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


def recover_operation(link: CheckoutLink, client: MerchantApiClient) -> bool:
    """Attach the operation of a link whose creation went unanswered, if the API has it.

    The operation is the one with the link's order number whose redirect URL ends with the
    link's token. False when there is none (the creation did not happen).
    """
    if not link.order_id:
        return False
    page = client.list_operations(order_id=[link.order_id], per_page=100)
    for operation in page.items:
        if (operation.redirect_url or "").endswith(f"/checkout/{link.token}"):
            attach(link, operation.id)
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
        attach(link, operation.id)
    return operation

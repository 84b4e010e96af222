"""References from the public checkout page to operations: random tokens kept in the database.

An operation created through the portal gets `redirect_url` = the checkout page of a fresh link,
so the customer's URL carries no operation id, merchant id or order number: only 32 random bytes.
The link is reserved before the API call (its URL goes into the request) and attached to the
operation's id once the API has answered.

Operation ids are the account's own (another account numbers its operations alike), so a link
keeps the generation of the connection it was made under: once the merchant connects another
account (or token), the link's operation is asked neither of the API nor of the mirror
(`of_earlier_connection`), and its page shows only what the link kept.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import current_app

from portal.api import ApiFailure, ApiUnavailable, Operation
from portal.database import utcnow
from portal.extensions import db
from portal.identity.models import Merchant
from portal.live.models import MirrorState
from portal.payments.models import CheckoutLink, MirroredOperation
from portal.settings.rules.connection import ApiNotConnected, api_client_for, is_current

TOKEN_BYTES = 32


def reserve_link(merchant: Merchant, order_id: str) -> CheckoutLink:
    """A new link for an operation about to be created through the merchant's connection now;
    saved with the caller's commit."""
    assert merchant.api_connection is not None  # the operation is created through it
    link = CheckoutLink(
        token=secrets.token_urlsafe(TOKEN_BYTES),
        merchant=merchant,
        connection_generation=merchant.api_connection.generation,
        order_id=order_id,
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


def of_earlier_connection(link: CheckoutLink) -> bool:
    """Whether the link was made under another API connection than the merchant's now: its
    operation id is then another account's, and the connection now would show (and take the
    customer to pay) a stranger's operation of the same id."""
    return not is_current(link.merchant, link.connection_generation)


def recovered(link: CheckoutLink) -> bool:
    """Whether the operation of a link whose creation went unanswered turned up after all; it
    is attached to the link and saved. False when it did not, or the API cannot be asked now.

    The operation is the one with the link's order number whose redirect URL ends with the
    link's token. A link of an earlier connection is not looked for through the one now.
    """
    if not link.order_id or of_earlier_connection(link):
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


@dataclass(frozen=True)
class MirroredPayment:
    """The mirror's copy of a link's operation, and the time it held for: the start of the
    mirror's last sync, which read every change the API had made until then."""

    operation: MirroredOperation
    as_of: datetime


def mirrored_payment(link: CheckoutLink) -> MirroredPayment | None:
    """What the mirror of the merchant's current connection knew of the link's operation, if it
    synced after the customer arrived; None when it did not, or has no state for it.

    The customer's arrival is the link's creation: the link is made when the order sends the
    customer to pay, so a sync after it read the order while the customer's payment was under
    way or done; a copy from before (another connection's operation of the same id) knows
    nothing of this customer. The page shows the time beside the state, so the customer can
    tell how old it is; the visit itself cannot be the mark, as the mirror reads the same API
    and cannot have synced while the API is down. A link of an earlier connection has none: the
    mirror is the connection's now.
    """
    if link.operation_id is None or of_earlier_connection(link):
        return None
    row = db.session.scalar(
        db.select(MirroredOperation).where(
            MirroredOperation.merchant_id == link.merchant_id,
            MirroredOperation.operation_id == link.operation_id,
        )
    )
    state = db.session.get(MirrorState, link.merchant_id)
    if row is None or row.state is None or state is None or state.last_sync_at is None:
        return None
    if state.last_sync_at <= link.created_at:
        return None
    return MirroredPayment(row, state.last_sync_at)

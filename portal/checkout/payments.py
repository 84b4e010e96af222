"""The live state of a customer's payment, read from the API and cut down to what they may see.

Only the order number, the amount with its currency and the state leave this module: never the
operation id, address, fees, transactions or anything else of the merchant's account.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from decimal import Decimal

from flask import current_app
from flask_babel import lazy_gettext as _l
from flask_babel.speaklater import LazyString

from portal.api import ApiRefusal, ApiUnavailable, Operation
from portal.models import CheckoutLink
from portal.rules.connection import ApiNotConnected, api_client_for
from portal.rules.web_urls import is_web_url


class State(enum.StrEnum):
    """What the customer is told; the API's status texts map onto these."""

    WAITING = "waiting"  # new, nothing paid yet
    RECEIVED = "received"  # new, partly paid
    CONFIRMED = "confirmed"
    EXPIRED = "expired"
    CANCELED = "canceled"
    FAILED = "failed"
    CHECKING = "checking"  # a status text we do not know: look again
    UNREACHABLE = "unreachable"  # the API did not answer: look again
    UNAVAILABLE = "unavailable"  # the API refused (not connected, banned): asking again won't help


FINAL_STATES = frozenset(
    {State.CONFIRMED, State.EXPIRED, State.CANCELED, State.FAILED, State.UNAVAILABLE}
)
PAYABLE_STATES = frozenset({State.WAITING, State.RECEIVED})
# Each state's short label and the sentence that explains it to the customer.
STATE_WORDS: dict[State, tuple[LazyString, LazyString]] = {
    State.WAITING: (
        _l("Waiting for payment"),
        _l("No payment has arrived for this order yet."),
    ),
    State.RECEIVED: (
        _l("Partly paid"),
        _l("Part of the amount has arrived; the rest is still due."),
    ),
    State.CONFIRMED: (
        _l("Confirmed"),
        _l("Your payment is confirmed. %(shop)s has received it."),
    ),
    State.EXPIRED: (
        _l("Expired"),
        _l("The invoice expired. If you sent money, contact %(shop)s."),
    ),
    State.CANCELED: (_l("Canceled"), _l("The invoice was canceled.")),
    State.FAILED: (_l("Failed"), _l("The payment failed. No payment was completed.")),
    State.CHECKING: (
        _l("Checking"),
        _l("We are checking your payment. This page updates by itself."),
    ),
    State.UNREACHABLE: (
        _l("Checking"),
        _l("We cannot reach the payment service right now. This page tries again by itself."),
    ),
    State.UNAVAILABLE: (
        _l("Not available"),
        _l("The state of this payment cannot be shown right now. Contact %(shop)s with questions."),
    ),
}
PAY_LABELS = {State.WAITING: _l("Pay now"), State.RECEIVED: _l("Pay the rest")}
_BY_STATUS = {
    "confirmed": State.CONFIRMED,
    "expired": State.EXPIRED,
    "canceled": State.CANCELED,
    "failed": State.FAILED,
}


@dataclass(frozen=True)
class Payment:
    """What the checkout page shows; the details are None when the API gave none."""

    state: State
    order_number: str | None = None
    amount: Decimal | None = None
    currency: str | None = None
    payment_url: str | None = field(default=None, repr=False)  # used to redirect, never shown

    @property
    def final(self) -> bool:
        """Whether the page stops asking again."""
        return self.state in FINAL_STATES

    @property
    def payable(self) -> bool:
        """Whether the hosted payment page can still take (the rest of) the payment."""
        return self.state in PAYABLE_STATES and is_web_url(self.payment_url)

    @property
    def label(self) -> LazyString:
        return STATE_WORDS[self.state][0]

    @property
    def explanation(self) -> LazyString:
        return STATE_WORDS[self.state][1]

    @property
    def pay_label(self) -> LazyString | None:
        return PAY_LABELS.get(self.state)


def state_of(operation: Operation) -> State:
    if operation.status == "new":
        paid = operation.amount_paid or Decimal(0)
        return State.RECEIVED if paid > 0 else State.WAITING
    return _BY_STATUS.get(operation.status, State.CHECKING)


def payment_of(link: CheckoutLink) -> Payment:
    """The payment behind a link, or a state that says why it cannot be shown now."""
    try:
        operation = api_client_for(link.merchant).get_operation(link.operation_id or "")
    except ApiUnavailable as error:
        current_app.logger.warning("Checkout page: payment service unavailable: %s", error)
        return Payment(State.UNREACHABLE)
    except (ApiRefusal, ApiNotConnected) as error:
        current_app.logger.warning("Checkout page of merchant %s: %r", link.merchant_id, error)
        return Payment(State.UNAVAILABLE)
    return Payment(
        state_of(operation),
        order_number=operation.order_id,
        amount=operation.amount,
        currency=operation.currency,
        payment_url=operation.payment_url,
    )

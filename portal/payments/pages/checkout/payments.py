"""The live state of a customer's payment, read from the API and cut down to what they may see.

Only the order number, the amounts and the state leave this module: never the operation id,
address, fees, transactions or anything else of the merchant's account.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from decimal import Decimal

from flask import current_app
from flask_babel import lazy_gettext as _l
from flask_babel.speaklater import LazyString

from portal.api import ApiRefusal, ApiUnavailable, Operation
from portal.payments.models import CheckoutLink
from portal.payments.rules.operation_money import amount_due
from portal.settings.rules.connection import ApiNotConnected, api_client_for
from portal.web_urls import is_web_url


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
# The states in which the API could not be asked: only then does the redirect code speak.
UNANSWERED_STATES = frozenset({State.UNREACHABLE, State.UNAVAILABLE})
LABELS: dict[State, LazyString] = {
    State.WAITING: _l("Waiting for payment"),
    State.RECEIVED: _l("Partly paid"),
    State.CONFIRMED: _l("Confirmed"),
    State.EXPIRED: _l("Expired"),
    State.CANCELED: _l("Canceled"),
    State.FAILED: _l("Failed"),
    State.CHECKING: _l("Checking"),
    State.UNREACHABLE: _l("Checking"),
    State.UNAVAILABLE: _l("Not available"),
}
# Why the page shows no live state, under the heading the redirect code chose.
UNANSWERED_WORDS: dict[State, LazyString] = {
    State.UNREACHABLE: _l(
        "We cannot reach the payment service right now. This page tries again by itself."
    ),
    State.UNAVAILABLE: _l(
        "The state of this payment cannot be shown right now. Contact %(shop)s with questions."
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
    """What the checkout page shows; the details are None when nobody knows them.

    `amount` is in the order's `currency`; `due` and `paid` are in `currency_paid`, the currency
    the customer pays in (the same one, or a crypto currency for a fiat order).
    """

    state: State
    order_number: str | None = None
    amount: Decimal | None = None
    currency: str | None = None
    currency_paid: str | None = None
    due: Decimal | None = None
    paid: Decimal | None = None
    payment_url: str | None = field(default=None, repr=False)  # used to redirect, never shown

    @property
    def answered(self) -> bool:
        """Whether the API told the state (else the redirect code is all the page knows)."""
        return self.state not in UNANSWERED_STATES

    @property
    def final(self) -> bool:
        """Whether the page stops asking again."""
        return self.state in FINAL_STATES

    @property
    def payable(self) -> bool:
        """Whether the hosted payment page can still take (the rest of) the payment."""
        return self.state in PAYABLE_STATES and is_web_url(self.payment_url)

    @property
    def money_arrived(self) -> bool:
        return self.paid is not None and self.paid > 0

    @property
    def left(self) -> Decimal | None:
        """What is still to pay in the payment currency (never below zero)."""
        if self.due is None or self.paid is None:
            return None
        return max(self.due - self.paid, Decimal(0))

    @property
    def converted(self) -> bool:
        """Whether the customer pays in another currency than the order's (a fiat order)."""
        return self.currency_paid is not None and self.currency_paid != self.currency

    @property
    def label(self) -> LazyString:
        return LABELS[self.state]

    @property
    def unanswered_words(self) -> LazyString | None:
        return UNANSWERED_WORDS.get(self.state)

    @property
    def pay_label(self) -> LazyString | None:
        return PAY_LABELS.get(self.state)


def state_of(operation: Operation) -> State:
    if operation.status == "new":
        paid = operation.amount_paid or Decimal(0)
        return State.RECEIVED if paid > 0 else State.WAITING
    return _BY_STATUS.get(operation.status, State.CHECKING)


def payment_of(link: CheckoutLink) -> Payment:
    """The payment behind a link, or a state that says why it cannot be shown now (with the
    order number and amount the link kept, so that the customer still sees what they ordered)."""
    try:
        operation = api_client_for(link.merchant).get_operation(link.operation_id or "")
    except ApiUnavailable as error:
        current_app.logger.warning("Checkout page: payment service unavailable: %s", error)
        return _remembered(link, State.UNREACHABLE)
    except (ApiRefusal, ApiNotConnected) as error:
        current_app.logger.warning("Checkout page of merchant %s: %r", link.merchant_id, error)
        return _remembered(link, State.UNAVAILABLE)
    return Payment(
        state_of(operation),
        order_number=operation.order_id,
        amount=operation.amount,
        currency=operation.currency,
        currency_paid=operation.currency_paid,
        due=amount_due(operation),
        paid=operation.amount_paid or Decimal(0),  # null right after creation: nothing yet
        payment_url=operation.payment_url,
    )


def _remembered(link: CheckoutLink, state: State) -> Payment:
    return Payment(state, order_number=link.order_id, amount=link.amount, currency=link.currency)

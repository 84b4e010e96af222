"""The state of a customer's payment, read from the API (or, while the API cannot be asked, from
the mirror's last sync) and cut down to what they may see.

The state is the one every page says (`operation_money`). Only the order number, the amounts and
the state leave this module: never the operation id, address, fees, transactions or anything
else of the merchant's account.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from flask import current_app
from flask_babel import lazy_gettext as _l
from flask_babel.speaklater import LazyString

from portal.api import ApiRefusal, ApiUnavailable, Operation
from portal.api.records import parse_record
from portal.payments.models import CheckoutLink
from portal.payments.rules.checkout_links import (
    MirroredPayment,
    mirrored_payment,
    of_earlier_connection,
)
from portal.payments.rules.operation_money import (
    ZERO,
    State,
    amount_due,
    can_change,
    money_of,
)
from portal.settings.rules.connection import ApiNotConnected, api_client_for
from portal.web_urls import is_web_url


class Reading(enum.StrEnum):
    """Where the page got the state from."""

    LIVE = "live"  # the API answered
    UNREACHABLE = "unreachable"  # the API did not answer: look again
    UNAVAILABLE = "unavailable"  # the API refused (not connected, banned): asking again won't help


# The customer's words for each state: the words of `state_words.STATE_WORDS`, translated.
LABELS: dict[State, LazyString] = {
    State.PAID_LATE: _l("Paid late"),
    State.UNDERPAID: _l("Underpaid"),
    State.OVERPAID: _l("Overpaid"),
    State.PAID: _l("Paid"),
    State.PAID_UNCONFIRMED: _l("Paid, not confirmed"),
    State.PARTLY_PAID: _l("Partly paid"),
    State.AWAITING_DECISION: _l("Awaiting a decision"),
    State.AWAITING_PAYMENT: _l("Awaiting payment"),
    State.EXPIRED: _l("Expired"),
    State.CANCELED: _l("Canceled"),
    State.FAILED: _l("Failed"),
    State.REFUNDED: _l("Refunded"),
    State.PARTLY_REFUNDED: _l("Partly refunded"),
}  # `sent` is a withdrawal's, and no customer's page shows a withdrawal
CHECKING = _l("Checking")
NOT_AVAILABLE = _l("Not available")
# The states in which the hosted payment page still takes (the rest of) the payment.
PAYABLE_STATES = frozenset({State.AWAITING_PAYMENT, State.PARTLY_PAID})
# Why the page shows no live state.
UNANSWERED_WORDS: dict[Reading, LazyString] = {
    Reading.UNREACHABLE: _l(
        "We cannot reach the payment service right now. This page tries again by itself."
    ),
    Reading.UNAVAILABLE: _l(
        "The state of this payment cannot be shown right now. Contact %(shop)s with questions."
    ),
}
PAY_LABELS = {State.AWAITING_PAYMENT: _l("Pay now"), State.PARTLY_PAID: _l("Pay the rest")}


@dataclass(frozen=True)
class Payment:
    """What the checkout page shows; the details are None when nobody knows them.

    `state` is None when the page cannot tell (the API cannot be asked and the mirror has
    nothing newer than the customer's arrival, or a status this portal does not know);
    `as_of` is set when the state is the mirror's, as of its last sync. `amount` is in the
    order's `currency`; `due`, `paid` and `difference` (paid - due, zero within the merchant's
    tolerance) are in `currency_paid`, the currency the customer pays in.
    """

    reading: Reading
    state: State | None = None
    status: str | None = None
    as_of: datetime | None = None
    order_number: str | None = None
    amount: Decimal | None = None
    currency: str | None = None
    currency_paid: str | None = None
    due: Decimal | None = None
    paid: Decimal | None = None
    difference: Decimal | None = None
    payment_url: str | None = field(default=None, repr=False)  # used to redirect, never shown

    @property
    def live(self) -> bool:
        return self.reading is Reading.LIVE

    @property
    def answered(self) -> bool:
        """Whether the page knows the state (from the API, or from a recent enough mirror);
        else the redirect code is all it knows."""
        return self.live or self.as_of is not None

    @property
    def final(self) -> bool:
        """Whether the page stops asking again: a refusal, or a state that cannot change."""
        if self.reading is Reading.UNAVAILABLE:
            return True
        return self.live and self.state is not None and not can_change(self.status or "")

    @property
    def payable(self) -> bool:
        """Whether the hosted payment page can still take (the rest of) the payment."""
        return self.live and self.state in PAYABLE_STATES and is_web_url(self.payment_url)

    @property
    def money_arrived(self) -> bool:
        return self.paid is not None and self.paid > 0

    @property
    def left(self) -> Decimal | None:
        """What is still to pay in the payment currency (never below zero)."""
        if self.difference is None:
            return None
        return max(-self.difference, ZERO)

    @property
    def surplus(self) -> Decimal | None:
        """What was paid beyond the due (never below zero)."""
        if self.difference is None:
            return None
        return max(self.difference, ZERO)

    @property
    def converted(self) -> bool:
        """Whether the customer pays in another currency than the order's (a fiat order)."""
        return self.currency_paid is not None and self.currency_paid != self.currency

    @property
    def label(self) -> LazyString:
        label = LABELS.get(self.state) if self.state is not None and self.answered else None
        if label is not None:
            return label
        return NOT_AVAILABLE if self.reading is Reading.UNAVAILABLE else CHECKING

    @property
    def unanswered_words(self) -> LazyString | None:
        return UNANSWERED_WORDS.get(self.reading)

    @property
    def pay_label(self) -> LazyString | None:
        return PAY_LABELS.get(self.state) if self.state is not None else None


def payment_of(link: CheckoutLink) -> Payment:
    """The payment behind a link, or, when the API cannot be asked, the mirror's copy of it if
    it is recent enough (`mirrored_payment`), else the order number and amount the link kept,
    so that the customer still sees what they ordered. A link of an earlier API connection gets
    only what it kept, unavailable: its operation id is another account's."""
    if of_earlier_connection(link):
        return _kept(link, Reading.UNAVAILABLE)
    try:
        operation = api_client_for(link.merchant).get_operation(link.operation_id or "")
    except ApiUnavailable as error:
        current_app.logger.warning("Checkout page: payment service unavailable: %s", error)
        return _remembered(link, Reading.UNREACHABLE)
    except (ApiRefusal, ApiNotConnected) as error:
        current_app.logger.warning("Checkout page of merchant %s: %r", link.merchant_id, error)
        return _remembered(link, Reading.UNAVAILABLE)
    money = money_of(link.merchant, operation)
    return Payment(
        Reading.LIVE,
        money.state,
        money.status,
        order_number=operation.order_id,
        amount=operation.amount,
        currency=operation.currency,
        currency_paid=money.currency,
        due=money.due,
        paid=money.received,
        difference=money.difference,
        payment_url=operation.payment_url,
    )


def _remembered(link: CheckoutLink, reading: Reading) -> Payment:
    mirrored = mirrored_payment(link)
    if mirrored is None:
        return _kept(link, reading)
    return _from_mirror(reading, mirrored)


def _kept(link: CheckoutLink, reading: Reading) -> Payment:
    """What the link itself kept: the order number and the amount asked, no state."""
    return Payment(reading, order_number=link.order_id, amount=link.amount, currency=link.currency)


def _from_mirror(reading: Reading, mirrored: MirroredPayment) -> Payment:
    """The mirror's state and figures of the operation, as its last sync read them."""
    row = mirrored.operation
    try:
        state: State | None = State(row.state or "")
    except ValueError:  # none, or a state a newer portal wrote
        state = None
    return Payment(
        reading,
        state,
        row.status,
        as_of=mirrored.as_of,
        order_number=row.order_id,
        amount=row.amount,
        currency=row.currency,
        currency_paid=row.currency_paid,
        due=amount_due(parse_record(Operation, row.record)),
        paid=row.amount_paid or ZERO,
        difference=row.difference,
    )

"""The checkout page's heading: from the payment's state, or from the redirect code.

The state the API reports decides whenever the API answers: the code in the URL is only what the
hosted payment page said when the customer left it, and may be stale or wrong (no code while
nothing was paid, `status=4` on an operation the merchant later confirmed). The code decides
only when the API cannot be asked (an unknown operation, the application or company banned, the
API down).

The code (the redirect codes of docs/sandbox.md) arrives as `status`, `code` or `status_code` in the
query string; no code at all means the payment went through. Anything else (empty, not 1-8, two
different codes) is "unknown".
"""

from __future__ import annotations

from dataclasses import dataclass

from flask_babel import lazy_gettext as _l
from flask_babel.speaklater import LazyString
from werkzeug.datastructures import MultiDict

from portal.payments.pages.checkout.payments import PAYABLE_STATES, Payment, State

CODE_PARAMETERS = ("status", "code", "status_code")
SUCCESS = "success"
UNKNOWN = "unknown"
CODES = frozenset("12345678")


@dataclass(frozen=True)
class Outcome:
    """A heading, what happened and what to do next, in the customer's words.

    `tone` styles the message (ok, error, warning, info). The sentences may name `%(shop)s`,
    and what was paid and what is left (`%(paid)s`, `%(left)s`: figures with their currency).
    """

    tone: str
    title: LazyString
    message: LazyString
    next_step: LazyString


OUTCOMES: dict[str, Outcome] = {
    SUCCESS: Outcome(
        "ok",
        _l("Thank you for your payment"),
        _l("Your payment was sent to %(shop)s."),
        _l("The state of your payment is shown below; it updates by itself."),
    ),
    "1": Outcome(
        "warning",
        _l("Payment canceled"),
        _l("The payment was canceled, so nothing was paid for this order."),
        _l("To buy after all, return to the shop and place the order again."),
    ),
    "2": Outcome(
        "error",
        _l("Invoice not found"),
        _l("The payment service could not find the invoice for this order."),
        _l("Contact %(shop)s and mention your order number."),
    ),
    "3": Outcome(
        "error",
        _l("The shop's payment setup was not found"),
        _l("%(shop)s cannot take payments through the payment service right now."),
        _l("Contact %(shop)s to pay another way."),
    ),
    "4": Outcome(
        "warning",
        _l("The time to pay has run out"),
        _l("The invoice expired before a payment arrived."),
        _l(
            "If you sent money, contact %(shop)s with your order number. "
            "Otherwise return to the shop and place the order again."
        ),
    ),
    "5": Outcome(
        "info",
        _l("This invoice is already handled"),
        _l("There is nothing more to pay on this invoice."),
        _l("Check the state of your payment below. If something looks wrong, contact %(shop)s."),
    ),
    "6": Outcome(
        "warning",
        _l("Payments are unavailable for the moment"),
        _l("The payment service cannot take payments right now. Nothing was paid."),
        _l("Try again in a few minutes."),
    ),
    "7": Outcome(
        "error",
        _l("This shop cannot take payments"),
        _l("%(shop)s cannot accept payments at the moment. Nothing was paid."),
        _l("Contact %(shop)s to pay another way."),
    ),
    "8": Outcome(
        "error",
        _l("The payment failed"),
        _l("The payment provider could not complete the payment."),
        _l("Return to the shop to order again, or contact %(shop)s."),
    ),
    UNKNOWN: Outcome(
        "info",
        _l("We could not read the result of your payment"),
        _l("The payment service sent you back without a result we understand."),
        _l("The state of your payment is shown below; it updates by itself."),
    ),
}


# The heading for each state the API reports.
STATE_OUTCOMES: dict[State, Outcome] = {
    State.WAITING: Outcome(
        "info",
        _l("Waiting for your payment"),
        _l("No payment has arrived for this order yet."),
        _l(
            "If you have just paid, your payment shows here as soon as it arrives; this page "
            "updates by itself."
        ),
    ),
    State.RECEIVED: Outcome(
        "warning",
        _l("Part of your payment has arrived"),
        _l("%(paid)s paid, %(left)s left."),
        _l("Pay the rest before the invoice expires; this page updates by itself."),
    ),
    State.CONFIRMED: Outcome(
        "ok",
        _l("Thank you for your payment"),
        _l("Your payment is confirmed. %(shop)s has received it."),
        _l("There is nothing more to do."),
    ),
    State.EXPIRED: Outcome(
        "warning",
        _l("The time to pay has run out"),
        _l("The invoice expired before a payment arrived."),
        _l("To buy after all, return to the shop and place the order again."),
    ),
    State.CANCELED: OUTCOMES["1"],
    State.FAILED: OUTCOMES["8"],
    State.CHECKING: Outcome(
        "info",
        _l("We are checking your payment"),
        _l("The payment service is still working on it."),
        _l("The state of your payment is shown below; it updates by itself."),
    ),
}
# Ended after money arrived: the customer must know that the shop has to settle it.
AFTER_MONEY: dict[State, Outcome] = {
    State.EXPIRED: Outcome(
        "warning",
        _l("The time to pay ran out before the full amount arrived"),
        _l("%(paid)s arrived before the invoice expired."),
        _l("Contact %(shop)s with your order number about the money you sent."),
    ),
    State.CANCELED: Outcome(
        "warning",
        _l("The invoice was canceled after a payment arrived"),
        _l("%(paid)s arrived before the invoice was canceled."),
        _l("Contact %(shop)s with your order number about the money you sent."),
    ),
    State.FAILED: Outcome(
        "error",
        _l("The payment failed"),
        _l("%(paid)s arrived, but the payment could not be completed."),
        _l("Contact %(shop)s with your order number about the money you sent."),
    ),
}
# A code that explains why a customer whose payment is still open came back without paying.
NOTICES: dict[str, LazyString] = {
    "6": _l(
        "The payment service could not take payments a moment ago. Try again in a few minutes."
    ),
    "8": _l("The payment provider could not complete your payment. You can try again."),
}


def outcome_key(args: MultiDict[str, str]) -> str:
    """SUCCESS when no code was sent, "1" to "8" for a known code, else UNKNOWN.

    Every value of every accepted name counts, so a repeated code must agree with itself.
    """
    values = {value.strip() for name in CODE_PARAMETERS for value in args.getlist(name)}
    if not values:
        return SUCCESS
    value = values.pop() if len(values) == 1 else UNKNOWN
    return value if value in CODES else UNKNOWN


def outcome_for(payment: Payment, args: MultiDict[str, str]) -> Outcome:
    """The state's own words when the API answered; the redirect code's when it could not."""
    if not payment.answered:
        return OUTCOMES[outcome_key(args)]
    if payment.money_arrived and payment.state in AFTER_MONEY:
        return AFTER_MONEY[payment.state]
    return STATE_OUTCOMES[payment.state]


def notice_for(payment: Payment, args: MultiDict[str, str]) -> LazyString | None:
    """Why the hosted page sent back a customer whose payment is still open, if its code says."""
    if payment.state not in PAYABLE_STATES:
        return None
    return NOTICES.get(outcome_key(args))

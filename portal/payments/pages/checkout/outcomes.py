"""The checkout page's heading: from the payment's state, or from the redirect code.

The state decides whenever the page knows it: from the API, or, while the API cannot be asked,
from the mirror's copy synced after the customer arrived (`mirrored_payment`). The code in the
URL is only what the hosted payment page said when the customer left it, and may be stale or
wrong (no code while nothing was paid, `status=4` on an operation the merchant later confirmed).
The code decides only when the state is not known (an unknown operation, the application or
company banned, the API down, and no recent copy in the mirror), and even then no code never
thanks for a payment nobody has seen: the page says it is checking.

The code (the redirect codes of docs/sandbox.md) arrives as `status`, `code` or `status_code` in the
query string; no code at all means the hosted page saw the payment go through. Anything else
(empty, not 1-8, two different codes) is "unknown".
"""

from __future__ import annotations

from dataclasses import dataclass

from flask_babel import lazy_gettext as _l
from flask_babel.speaklater import LazyString
from werkzeug.datastructures import MultiDict

from portal.payments.pages.checkout.payments import PAYABLE_STATES, Payment
from portal.payments.rules.operation_money import State

CODE_PARAMETERS = ("status", "code", "status_code")
SUCCESS = "success"
UNKNOWN = "unknown"
CODES = frozenset("12345678")


@dataclass(frozen=True)
class Outcome:
    """A heading, what happened and what to do next, in the customer's words.

    `tone` styles the message (ok, error, warning, info). The sentences may name `%(shop)s`,
    and figures with their currency: what was due, paid, is left and was paid beyond the due
    (`%(due)s`, `%(paid)s`, `%(left)s`, `%(surplus)s`).
    """

    tone: str
    title: LazyString
    message: LazyString
    next_step: LazyString


# Said while the page cannot tell what happened: never a thanks beside "Checking".
CHECKING = Outcome(
    "info",
    _l("We are checking your payment"),
    _l("We cannot tell yet what happened to your payment."),
    _l("The state of your payment is shown below as soon as we know it."),
)
OUTCOMES: dict[str, Outcome] = {
    # The hosted page's success return: without the state the page cannot confirm it.
    SUCCESS: CHECKING,
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


THANKS = _l("Thank you for your payment")
WAITING = Outcome(
    "info",
    _l("Waiting for your payment"),
    _l("No payment has arrived for this order yet."),
    _l(
        "If you have just paid, your payment shows here as soon as it arrives; this page "
        "updates by itself."
    ),
)
# The heading for each state.
STATE_OUTCOMES: dict[State, Outcome] = {
    State.AWAITING_PAYMENT: WAITING,
    State.AWAITING_DECISION: Outcome(
        "info",
        _l("Your payment has arrived and awaits a check"),
        _l("A payment arrived for this order; %(shop)s has to check it before it counts."),
        _l("You do not need to pay again; this page updates by itself."),
    ),
    State.PARTLY_PAID: Outcome(
        "warning",
        _l("Part of your payment has arrived"),
        _l("%(paid)s paid, %(left)s left."),
        _l("Pay the rest before the invoice expires; this page updates by itself."),
    ),
    State.PAID_UNCONFIRMED: Outcome(
        "ok",
        _l("Your payment has arrived"),
        _l("The full amount has arrived and is being confirmed."),
        _l("There is nothing more to pay; this page updates by itself."),
    ),
    State.PAID: Outcome(
        "ok",
        THANKS,
        _l("Your payment is confirmed. %(shop)s has received it."),
        _l("There is nothing more to do."),
    ),
    State.OVERPAID: Outcome(
        "warning",
        _l("You paid more than was due"),
        _l("%(paid)s arrived: %(surplus)s more than the %(due)s due."),
        _l("%(shop)s will contact you to give back the %(surplus)s paid too much."),
    ),
    State.UNDERPAID: Outcome(
        "ok",
        _l("Your payment is accepted"),
        _l("%(shop)s accepted %(paid)s for this order, %(left)s less than was due."),
        _l("There is nothing more to pay."),
    ),
    State.EXPIRED: Outcome(
        "warning",
        _l("The time to pay has run out"),
        _l("The invoice expired before a payment arrived."),
        _l("To buy after all, return to the shop and place the order again."),
    ),
    State.CANCELED: OUTCOMES["1"],
    State.FAILED: OUTCOMES["8"],
}
# Money that arrived after the time to pay ran out, and the shop took it all the same.
LATE_ACCEPTED = Outcome(
    "ok",
    THANKS,
    _l("Your payment arrived after the time to pay ran out; %(shop)s has accepted it."),
    _l("There is nothing more to do."),
)
# Ended after money arrived (paid late, by the API's status): the customer must know that the
# shop has to settle it.
AFTER_MONEY: dict[str, Outcome] = {
    "expired": Outcome(
        "warning",
        _l("The time to pay ran out before the full amount arrived"),
        _l("%(paid)s arrived before the invoice expired."),
        _l("Contact %(shop)s with your order number about the money you sent."),
    ),
    "canceled": Outcome(
        "warning",
        _l("The invoice was canceled after a payment arrived"),
        _l("%(paid)s arrived before the invoice was canceled."),
        _l("Contact %(shop)s with your order number about the money you sent."),
    ),
    "failed": Outcome(
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
    """The state's own words when the page knows the state; the redirect code's when it does
    not (never a thanks: no code reads as "checking")."""
    if not payment.answered:
        return OUTCOMES[outcome_key(args)]
    if payment.state is State.PAID_LATE:
        if payment.status == "confirmed":
            return LATE_ACCEPTED
        return AFTER_MONEY.get(payment.status or "", CHECKING)
    return STATE_OUTCOMES.get(payment.state, CHECKING) if payment.state else CHECKING


def notice_for(payment: Payment, args: MultiDict[str, str]) -> LazyString | None:
    """Why the hosted page sent back a customer whose payment is still open, if its code says."""
    if payment.state not in PAYABLE_STATES:
        return None
    return NOTICES.get(outcome_key(args))

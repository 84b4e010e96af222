"""What the hosted payment page said when it sent the customer back (API documentation, section 6).

The code arrives as `status`, `code` or `status_code` in the query string; no code at all means
the payment went through. Anything else (empty, not 1-8, two different codes) is "unknown": the
page then relies on the live state of the payment alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask_babel import lazy_gettext as _l
from flask_babel.speaklater import LazyString
from werkzeug.datastructures import MultiDict

CODE_PARAMETERS = ("status", "code", "status_code")
SUCCESS = "success"
UNKNOWN = "unknown"
CODES = frozenset("12345678")


@dataclass(frozen=True)
class Outcome:
    """A heading, what happened and what to do next, in the customer's words.

    `tone` styles the message (ok, error, warning, info); `may_pay` is False when paying again
    cannot help (the merchant cannot take payments or the invoice is gone).
    """

    tone: str
    title: LazyString
    message: LazyString
    next_step: LazyString
    may_pay: bool = True


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
        may_pay=False,
    ),
    "2": Outcome(
        "error",
        _l("Invoice not found"),
        _l("The payment service could not find the invoice for this order."),
        _l("Contact %(shop)s and mention your order number."),
        may_pay=False,
    ),
    "3": Outcome(
        "error",
        _l("The shop's payment setup was not found"),
        _l("%(shop)s cannot take payments through the payment service right now."),
        _l("Contact %(shop)s to pay another way."),
        may_pay=False,
    ),
    "4": Outcome(
        "warning",
        _l("The time to pay has run out"),
        _l("The invoice expired before a payment arrived."),
        _l(
            "If you sent money, contact %(shop)s with your order number. "
            "Otherwise return to the shop and place the order again."
        ),
        may_pay=False,
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
        may_pay=False,
    ),
    "8": Outcome(
        "error",
        _l("The payment failed"),
        _l("The payment provider could not complete the payment."),
        _l("Return to the shop to order again, or contact %(shop)s."),
        may_pay=False,
    ),
    UNKNOWN: Outcome(
        "info",
        _l("We could not read the result of your payment"),
        _l("The payment service sent you back without a result we understand."),
        _l("The state of your payment is shown below; it updates by itself."),
    ),
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


def outcome_for(args: MultiDict[str, str]) -> Outcome:
    return OUTCOMES[outcome_key(args)]

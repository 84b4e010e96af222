"""The API's business errors in words a merchant understands, with what to do about them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from flask import abort, current_app, request
from werkzeug.wrappers import Response

from portal.api import ApiError, ApiUnavailable
from portal.web.errors import api_unavailable, error_page

T = TypeVar("T")

EXPLANATIONS = {
    1: "The payment service no longer supports this action.",
    5: "The payment service has no operation with this id for your merchant.",
    6: "The payment service has no transaction with this id for your merchant.",
    9: "The payment service did not accept these details. Check them and try again.",
    11: "Withdrawals are switched off for your account at the payment service. "
    "Contact the payment service to have them allowed.",
    12: "This withdrawal is above what the wallet can pay out now: the balance (including the "
    "network fee) or today's withdrawal limit would be exceeded. Try a smaller amount, "
    "or try again tomorrow.",
    13: "There is no wallet in this currency that can pay out. Choose another wallet.",
    14: "There is no voucher with this id.",
    15: "The voucher could not be created: the wallet of this currency does not hold enough "
    "funds, or there is no such wallet.",
    16: "This voucher can no longer be canceled: it has been paid off, canceled or has expired.",
    17: "No voucher can be paid off with this code: it does not exist, was canceled, has "
    "expired or was already paid off.",
    18: "There is no cross exchange with this id.",
    19: "The cross exchange could not be created: the amount is below the minimum for this "
    "currency. Try a larger amount.",
    20: "This cross exchange can no longer be canceled: it has been paid, canceled or has expired.",
    21: "This pair of currencies cannot be exchanged. Choose another pair.",
    22: "You have reached today's number of exchanges. Try again tomorrow.",
    23: "This amount is above what can be exchanged in one go for this currency. "
    "Try a smaller amount.",
    24: "There is no wallet for one of these currencies. Choose currencies you hold.",
    25: "The exchange could not be made: the amount is below the minimum, or above what the "
    "wallet holds.",
}


def explain(error: ApiError) -> str:
    """A sentence for the person, from the error's code; the API's own message otherwise."""
    return EXPLANATIONS.get(error.code) or f"The payment service refused: {error.describe()}."


def record_or_404(fetch: Callable[[], T], not_found_code: int, title: str) -> T:
    """The record `fetch()` reads from the API, or this page's own 404 when the API has no
    record with that id (its error `not_found_code`); any other failure is raised.
    """
    try:
        return fetch()
    except ApiError as error:
        if isinstance(error, ApiUnavailable) or error.code != not_found_code:
            raise
        abort(error_page(404, title, explain(error)))


def unanswered(error: ApiUnavailable, where: str, url: str | None = None) -> Response:
    """The 502/504 page for a change that got no answer, never retried.

    When the request may have reached the API, whether it took effect is unknown: the page says
    where to check before trying again.
    """
    if not error.request_sent:
        return api_unavailable(error)
    current_app.logger.warning("No answer to a change on %s: %r", request.path, error)
    return error_page(
        504 if error.timeout else 502,
        "Outcome unknown",
        outcome_unknown(where),
        action=(f"Check {where}", url) if url else None,
    )


def outcome_unknown(where: str) -> str:
    """What a person reads when a change got no answer: it is not sent again; check first."""
    return (
        "The request reached the payment service but no answer came back, so it may or may "
        f"not have taken effect. It will not be sent again: check {where} before you try again."
    )

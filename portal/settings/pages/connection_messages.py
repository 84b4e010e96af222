"""What a person reads when the API connection cannot be made: on the settings page and from the
commands that connect a merchant (`portal.settings.rules.connection` decides; this says it)."""

from __future__ import annotations

from flask import current_app

from portal.api import ApiRefusal, ApiUnavailable, ErrorCode
from portal.settings.rules.connection import ConnectionRejected, TokenNeed, UrlProblem
from portal.web.error_messages import error_message

# Why an empty token field does not keep the stored token after the base URL or environment
# changed.
RETYPE = "stored tokens are only sent to the base URL and environment they were saved with."
TOKEN_NEEDS = {
    TokenNeed.ENTER: "Enter the application token.",
    TokenNeed.RETYPE: f"Type the application token again: {RETYPE}",
    TokenNeed.RETYPE_OR_REMOVE: f"Type the company token again, or remove it: {RETYPE}",
}
URL_PROBLEMS = {
    UrlProblem.INVALID: "Enter a valid address, such as https://api.example.com.",
    UrlProblem.NOT_WEB: "Enter an address starting with http:// or https://.",
    UrlProblem.USER_OR_SPACES: "Enter the address without a user name, spaces or backslashes.",
    UrlProblem.QUERY: "Enter the address without a query (?) or fragment (#).",
    UrlProblem.API_PATH: "Enter the address without /sandbox or /v1: the portal adds them.",
}
# Refusals of the connection itself: the API version, the token, a ban.
CREDENTIALS_REFUSED = {
    ErrorCode.DEPRECATED_ACTION,
    ErrorCode.UNAUTHENTICATED,
    ErrorCode.APPLICATION_BANNED,
    ErrorCode.COMPANY_BANNED,
}


def url_problem_sentence(problem: UrlProblem) -> str:
    if problem is UrlProblem.HOST_NOT_ALLOWED:
        allowed = ", ".join(current_app.config["API_ALLOWED_HOSTS"])
        return (
            f"This portal connects only to {allowed}. "
            "Ask the portal's operator to allow another host."
        )
    return URL_PROBLEMS[problem]


def rejection_sentence(rejection: ConnectionRejected) -> str:
    """What failed when the credentials were checked, and what to check."""
    failure = rejection.failure
    if isinstance(failure, ApiUnavailable):
        how = "did not answer in time" if failure.timeout else "could not be reached"
        return (
            f"The payment service {how} at {rejection.base_url}. "
            "Check the base URL, then try again."
        )
    if rejection.company_token:
        return (
            "The payment service rejected the company token (error 2, unauthenticated). "
            "Check the company token, or leave it empty."
        )
    assert isinstance(failure, ApiRefusal)  # the two kinds of ApiFailure
    if failure.code in CREDENTIALS_REFUSED:
        return error_message(failure.code)
    return (
        f"No Merchant API answered at this base URL and environment "
        f"(HTTP {failure.http_status}). Check the base URL and the environment."
    )

"""The one way the pages handle a failed call to the payment service (an API error).

A view that calls the API lets `ApiFailure` reach `handle_api_error`, which decides everything
the same way on every page:

- no usable answer (`ApiUnavailable`): when a change may have taken effect, the 502/504
  "Outcome unknown" page with where to check (`Check`), never a second attempt; when the
  request surely never left, the form again (502/504), saying that nothing was sent;
- a refusal the person cannot fix on this page (the credentials, a ban, the API's own trouble):
  the 502 page with a link to the API settings;
- a read that got no usable answer marks the connection down for a moment
  (`portal.settings.rules.api_down`): meanwhile the operations, transactions and rates pages
  read the portal's copy (`read_or_mirror`), every page says so, and the changes of the
  payments and money pages answer 503 before anything is sent (`refuse_changes_while_down`);
- any other refusal: the sentence for its code goes above the form (or next to the field it
  concerns), and the API's field messages next to the fields they name;
  the view shows its page again with the status `handle_api_error` returns: 409 when the
  record's state forbids the action, 422 otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from flask import Flask, abort, current_app, g, request
from flask_login import current_user
from werkzeug.wrappers import Response
from wtforms import Field, Form

from portal.api import ApiFailure, ApiRefusal, ApiUnavailable, ErrorCode
from portal.settings.rules import api_down
from portal.web.access import access_of
from portal.web.error_messages import error_message
from portal.web.errors import api_unavailable, error_page, note_unavailable

T = TypeVar("T")

MIRROR_HAS_NONE = (
    "The payment service does not answer, and the portal's copy has no record with this id. "
    "Try again in a minute."
)
NOTHING_SENT = (
    "The payment service could not be reached, so nothing was sent. Try again in a moment."
)
# Refusals about the connection itself, or the API's own trouble: nothing on the page can fix
# them, so they get the 502 page that links to the API settings.
UPSTREAM_TROUBLE = frozenset(
    {
        ErrorCode.SOMETHING_WENT_WRONG,
        ErrorCode.DEPRECATED_ACTION,
        ErrorCode.UNAUTHENTICATED,
        ErrorCode.APPLICATION_BANNED,
        ErrorCode.COMPANY_BANNED,
        ErrorCode.UNSUPPORTED_CONTENT_TYPE,
    }
)
# Refusals because of where a record or the account stands now, not what was typed: 409.
STATE_CONFLICTS = frozenset(
    {
        ErrorCode.OPERATION_CANCEL_NOT_ALLOWED,
        ErrorCode.VOUCHER_CANCEL_NOT_ALLOWED,
        ErrorCode.CROSS_EXCHANGE_CANCEL_NOT_ALLOWED,
        ErrorCode.WITHDRAWAL_NOT_ALLOWED,
        ErrorCode.EXCHANGE_COUNT_EXCEEDED,
    }
)


@dataclass(frozen=True)
class Check:
    """Where a person checks whether a change that got no answer took effect: "the voucher",
    and the page that shows it (None when only the payment service can tell)."""

    where: str
    url: str | None = None


@dataclass(frozen=True)
class Refused:
    """A failure to show with the form: the status to answer, and the sentence above the form
    (None when it went next to a field)."""

    status: int
    error: str | None


def handle_api_error(
    failure: ApiFailure,
    form: Form | None = None,
    check: Check | None = None,
    *,
    at: Field | None = None,
) -> Refused:
    """The one answer to a failed call (see the module's docstring): aborts with the page for
    upstream trouble; otherwise puts the refusal on `form` and returns what the view shows.

    `at` is the field a refusal concerns when it names none (the code of a voucher to pay off):
    its sentence goes next to that field instead of above the form.
    """
    if isinstance(failure, ApiUnavailable):
        if failure.request_sent or form is None:
            abort(unanswered(failure, check))
        return Refused(504 if failure.timeout else 502, NOTHING_SENT)
    assert isinstance(failure, ApiRefusal)  # the two kinds of ApiFailure
    if failure.code in UPSTREAM_TROUBLE:
        raise failure  # the handler's 502 page, which links to the API settings
    if form is not None and failure.code == ErrorCode.VALIDATION_ERRORS and failure.errors:
        unplaced = put_on_fields(form, failure.errors)
        return Refused(422, " ".join([error_message(failure.code), *unplaced]))
    status = 409 if failure.code in STATE_CONFLICTS else 422
    if at is not None:
        at.errors = [*at.errors, error_message(failure.code)]
        return Refused(status, None)
    return Refused(status, error_message(failure.code))


def put_on_fields(form: Form, errors: dict[str, list[str]]) -> list[str]:
    """Put the API's field messages (code 9) next to the fields of `form` they name; the
    messages that name no field of the form are returned, to be said above it."""
    unplaced = []
    for name, messages in errors.items():
        if name in form and name not in ("csrf_token", "submit"):
            form[name].errors = [*form[name].errors, *messages]
        else:
            unplaced.extend(messages)
    return unplaced


def unless_unavailable(read: Callable[[], T]) -> T | None:
    """What a page reads from the API, or None when no usable answer came (`ApiUnavailable`).

    For the pages that can show something without it (the dashboard without its figures, the
    new-operation form): they say so in a banner instead of the 502 page. A refusal still goes
    to its error page, as everywhere.
    """
    if read_only():
        return None
    try:
        return read()
    except ApiUnavailable as failure:
        current_app.logger.warning("Payment service unavailable on %s: %s", request.path, failure)
        note_unavailable()
        return None


def read_or_mirror(read: Callable[[], T], mirror: Callable[[], T]) -> T:
    """What `read()` asks of the API, or, while the merchant's payment service is down (or when
    it gives no usable answer now), what `mirror()` reads of the portal's copy; the page then
    shows the read-only banner and no actions (`read_only`)."""
    if not read_only():
        try:
            return read()
        except ApiUnavailable as failure:
            current_app.logger.warning(
                "Payment service unavailable on %s, showing the mirror: %s", request.path, failure
            )
            note_unavailable()
    return mirror()


def read_only() -> bool:
    """Whether the signed-in merchant's pages are read-only now: its payment service was found
    unavailable by this request or a moment ago."""
    if "api_read_only" not in g:
        g.api_read_only = current_user.is_authenticated and api_down.is_down(current_user.merchant)
    return bool(g.api_read_only)


# The subsystems whose pages' changes reach the payment service.
ACTING_SUBSYSTEMS = frozenset({"payments", "money"})
NOT_SENT_WHILE_DOWN = (
    "The payment service did not answer a moment ago, so the portal shows its own copy and "
    "sends nothing. Nothing was sent; try again in a minute."
)


def refuse_changes_while_down() -> Response | None:
    """Before a signed-in POST of the payments and money pages: 503, with nothing sent, while
    the merchant's payment service is down."""
    if request.method != "POST" or request.endpoint is None:
        return None
    if not isinstance(access_of(request.endpoint), frozenset):  # public or undeclared
        return None
    module = current_app.view_functions[request.endpoint].__module__.split(".")
    if len(module) < 2 or module[1] not in ACTING_SUBSYSTEMS or not read_only():
        return None
    return error_page(503, "The payment service is unavailable", NOT_SENT_WHILE_DOWN)


def init_app(app: Flask) -> None:
    app.before_request(refuse_changes_while_down)


def record_or_404(fetch: Callable[[], T], not_found: ErrorCode, title: str) -> T:
    """The record `fetch()` reads from the API, or this page's own 404 when the API has no
    record with that id (its error `not_found`); any other failure is raised.
    """
    try:
        return fetch()
    except ApiRefusal as refusal:
        if refusal.code != not_found:
            raise
        abort(error_page(404, title, error_message(refusal.code)))


def mirrored_or_404(record: T | None, title: str) -> T:
    """A record read from the mirror, or this page's own 404 when the mirror has none."""
    if record is None:
        abort(error_page(404, title, MIRROR_HAS_NONE))
    return record


def unanswered(failure: ApiUnavailable, check: Check | None = None) -> Response:
    """The 502/504 page for a call that got no usable answer, never retried.

    When the request may have reached the API and changed something (`check` says where to
    look), whether it took effect is unknown: the page says where to check before trying again.
    """
    if check is None or not failure.request_sent:
        return api_unavailable(failure)
    current_app.logger.warning("No answer to a change on %s: %r", request.path, failure)
    return error_page(
        504 if failure.timeout else 502,
        "Outcome unknown",
        outcome_unknown(check.where),
        action=(f"Check {check.where}", check.url) if check.url else None,
    )


def outcome_unknown(where: str) -> str:
    """What a person reads when a change got no answer: it is not sent again; check first."""
    return (
        "The request reached the payment service but no answer came back, so it may or may "
        f"not have taken effect. It will not be sent again: check {where} before you try again."
    )

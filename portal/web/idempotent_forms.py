"""Sending a form that moves money exactly once: its key field, the sending, and the pages for a
form sent before.

A view validates its form (whose `intent` is an `IdempotencyKeyField`), then calls `send`: the key
is claimed in the database and the API called once. Posting the same key again never sends: a
made record is shown, a refusal is raised again for the view to show with its form (with a new key),
and an unknown outcome gets the page that says where to check, with a button for a fresh form.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from flask import abort, current_app, flash, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response
from wtforms import HiddenField
from wtforms.validators import InputRequired, Regexp

from portal.api import ApiRefusal, ApiUnavailable, Identified
from portal.identity.rules import audit
from portal.money.models import IdempotencyKey, IntentKind, IntentState
from portal.money.rules import approvals, idempotency
from portal.money.rules.idempotency import new_key
from portal.web.api_errors import outcome_unknown
from portal.web.errors import error_page

T = TypeVar("T", bound=Identified)

STALE = "This form is out of date, so nothing was sent. Check the details and send it again."


class IdempotencyKeyField(HiddenField):
    """The form's idempotency key: a posted form must bring one, and every form shown gets a new
    one, made by the server as it renders the form (so a refused or corrected form that is sent
    again is a new sending, while a reload of the same post is the same one)."""

    def __init__(self, **kwargs: object) -> None:
        shape = Regexp(r"^[A-Za-z0-9_-]{16,64}\Z", message=STALE)
        super().__init__(validators=[InputRequired(STALE), shape], **kwargs)

    def _value(self) -> str:
        return new_key()


@dataclass(frozen=True)
class IdempotentForm:
    """One kind of form sent once: where a person checks its outcome, and finds what it made."""

    kind: IntentKind
    form_endpoint: str
    check: str  # where to check, in words: "the voucher list"
    check_url: Callable[[Mapping[str, str]], str | None]  # ... and its URL, from the parameters
    # The page of what the API made, from its id; None when the portal has no page for it.
    record_url: Callable[[str], str] | None

    @property
    def action(self) -> str:
        """Its action in the audit log: "voucher.create"."""
        return f"{self.kind.value}.create"

    @property
    def noun(self) -> str:
        return self.kind.value.replace("_", " ")


def refuse_used(spec: IdempotentForm, key: str) -> None:
    """Abort with where an earlier sending of this key stands (a refusal is raised again);
    nothing when the key was never sent. For views that ask more before sending (a code)."""
    intent = idempotency.find(current_user.merchant, spec.kind, key)
    if intent is not None and (intent.state != IntentState.PENDING or approvals.of_voucher(intent)):
        _where_it_stands(spec, intent)


def send(
    spec: IdempotentForm, key: str, parameters: Mapping[str, object], call: Callable[[], T]
) -> T:
    """Claim the key and make `call` once, audited: what it made, or its refusal raised.

    A lost answer aborts with "Outcome unknown" (502/504); a request that never left is raised
    like a refusal; another sending of the key aborts with where that one stands.
    """
    user = current_user._get_current_object()
    intent, won = idempotency.claim(user.merchant, user, spec.kind, key, audit.masked(parameters))
    if not won:
        _where_it_stands(spec, intent)
    try:
        with idempotency.settling(intent), audit.recorded(spec.action, parameters) as details:
            made = call()
            details[f"{spec.kind.value}_id"] = intent.record_id = made.id
    except ApiUnavailable as failure:
        if not failure.request_sent:
            raise  # nothing left: the view shows its form again (`api_errors.handle_api_error`)
        current_app.logger.warning("No answer to a change on %s: %r", request.path, failure)
        abort(_unknown(spec, intent, 504 if failure.timeout else 502))
    return made


def _where_it_stands(spec: IdempotentForm, intent: IdempotencyKey) -> None:
    held = approvals.of_voucher(intent) if intent.state == IntentState.PENDING else None
    if held is not None:  # sent by the worker once approved, with what the approval says
        flash("This form waits for an owner's approval: nothing was sent.", "info")
        abort(redirect(url_for("approvals.show", approval_id=held.id)))
    if intent.state == IntentState.SENT:
        if spec.record_url is None:
            made = f"{spec.noun} {intent.record_id}"
            flash(f"This form was already sent and made {made}; nothing was sent again.", "info")
            abort(redirect(url_for(spec.form_endpoint)))
        flash(f"This form was already sent: here is the {spec.noun} it made.", "info")
        assert intent.record_id is not None  # a sent intent keeps the id of what it made
        record = spec.record_url(intent.record_id)
        abort(redirect(record))
    if intent.state == IntentState.REFUSED:
        raise ApiRefusal(intent.error_code or 0)
    abort(_unknown(spec, intent, 409))


def _unknown(spec: IdempotentForm, intent: IdempotencyKey, status: int) -> Response:
    """The outcome of the key's one sending is not known (yet): where to check, a fresh form."""
    check_url = spec.check_url(intent.parameters)
    if intent.state == IntentState.SENDING:
        title = "Being sent"
        message = (
            "This form was already sent and the payment service has not answered yet. It will "
            f"not be sent again: check {spec.check} in a moment, before you try again."
        )
    else:
        title = "Outcome unknown"
        again = "This form was already sent. " if status == 409 else ""
        message = again + outcome_unknown(spec.check)
    return error_page(
        status,
        title,
        message,
        action=(f"Check {spec.check}", check_url) if check_url else None,
        fresh=(f"New {spec.noun}", url_for(spec.form_endpoint)),
    )

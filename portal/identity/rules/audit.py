"""The audit log: who did what and when, with what, and how it ended. Append-only.

Every state-changing action of the portal writes one event, success or not::

    from portal.identity.rules import audit

    # After the fact, when the outcome is known:
    audit.record("user.add", parameters={"email": email, "role": "operator"})
    audit.record("sign_in", parameters={"email": email}, error="The password is incorrect.")

    # Around one API call: the event is written whatever happens, and the exception (if any)
    # goes on to the caller. Add what the call returned to the yielded parameters.
    with audit.recorded("operation.cancel", {"operation_id": operation_id}):
        api.cancel_operation(operation_id)
    with audit.recorded("operation.create", {"amount": amount, "currency": currency}) as details:
        details["operation_id"] = api.create_operation(...).id

`action` is one of `ACTIONS` (a ValueError otherwise, so that a typo cannot hide an event).
`parameters` is a flat mapping of what the person asked for; values are stored as text (Decimal
amounts exactly), and secrets are masked before anything is stored: any key named like a password,
token or secret, and voucher codes (`code`, `voucher_code`); their values are also blanked out of
the error message. The password of any address (`https://user:password@host`) is masked in
values and messages alike. `error` is None for a success, an `ApiRefusal` (stored with its code and
message), an `ApiUnavailable` (the outcome "unknown" when the request may have reached the API,
"unavailable" when it did not), or a sentence for a refusal by the portal itself (outcome
"refused"). `user` defaults to the user of the current `Actor`, and the event belongs to the
user's merchant (`merchant` when there is no user, as for a failed sign-in; without either it is
kept but shown to no merchant). Each event is committed at once, in its own commit.

Who acts, and from which address, is the web kit's knowledge: it says so with `act_as` for each
request (and again when someone signs in or out). Without an actor (a command), events name no
user unless given one, and no address.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal

from flask import g, has_app_context

from portal.api import ApiFailure, ApiRefusal, ApiUnavailable, mask_token
from portal.extensions import db
from portal.identity.models import AuditEvent, Merchant, User

ACTIONS = {
    "sign_in": "Sign-in",
    "sign_out": "Sign-out",
    "password.check": "Current password asked",
    "password.change": "Own password changed",
    "api_settings.change": "API settings changed",
    "checkout_settings.change": "Checkout page settings changed",
    "user.add": "User added",
    "user.change": "User changed",
    "user.remove": "User removed",
    "user.invite_again": "Invitation sent again",
    "user.revoke_invitation": "Invitation revoked",
    "two_factor.enable": "Two-factor turned on",
    "two_factor.disable": "Two-factor turned off",
    "two_factor.recovery_codes": "Recovery codes replaced",
    "two_factor.recovery_code_used": "Recovery code used",
    "two_factor.code": "Two-factor code",
    "two_factor.requirement_on": "Two-factor required for every user",
    "two_factor.requirement_off": "Two-factor no longer required",
    "passkey.add": "Passkey added",
    "passkey.remove": "Passkey removed",
    "passkey.remove_all": "Every passkey of a user removed",
    "passkey.check": "Passkey refused",
    "passkey.approvals_on": "Passkey required for approvals",
    "passkey.approvals_off": "Passkey no longer required for approvals",
    "operation.create": "Operation created",
    "operation.cancel": "Operation canceled",
    "operation.settle": "Operation marked as settled",
    "transactions.link": "Transactions linked",
    "transactions.reject": "Transactions rejected",
    "withdrawal.confirm": "Withdrawal",
    "withdrawal_limit.change": "A currency's withdrawal limits changed",
    "limits.change": "Limits in the reporting currency changed",
    "approval.request": "Approval asked for",
    "approval.approve": "Approved by another owner",
    "approval.reject": "Rejected by another owner",
    "approval.withdraw": "Approval request withdrawn",
    "address_book.add": "Address added to the address book",
    "address_book.remove": "Address removed from the address book",
    "address_book.approve": "Address approved before its cooling-off ended",
    "cooling_off.change": "Cooling-off of new addresses changed",
    "control.request": "Relaxing a control asked for",
    "control.approve": "Relaxed control applied",
    "control.cancel": "Relaxing a control canceled",
    "refund.request": "Refund requested",
    "refund.approve": "Refund approved",
    "refund.cancel": "Refund canceled",
    "refund.reveal_link": "Refund claim link shown",
    "refund.link_days.change": "Refund link period changed",
    "voucher.create": "Voucher created",
    "voucher.cancel": "Voucher canceled",
    "voucher.pay_off": "Voucher paid off",
    "voucher.reveal_code": "Voucher code revealed",
    "exchange.create": "Exchange",
    "cross_exchange.create": "Cross exchange created",
    "cross_exchange.cancel": "Cross exchange canceled",
    "webhooks.change": "Webhook settings changed",
    "webhooks.rotate": "Webhook secret rotated",
    "webhooks.test": "Webhook test event sent",
    "webhooks.resend": "Webhook event resent",
    "webhooks.reveal_secret": "Webhook secret revealed",
    "webhooks.switch": "Webhook endpoint switched on or off",
    "webhooks.replay": "Webhook events replayed",
    "mirror.resync": "Full resync requested",
    "mail.choices": "E-mail choices changed",
    "statement_mail.choice": "Statement e-mail choice changed",
    "statement_mail.stop": "Statement e-mails stopped from the mail's link",
    "payment_tolerance.change": "Payment tolerance changed",
    "reporting_currency.change": "Reporting currency changed",
    "balance.enter": "Balance entered",
}
OUTCOMES = {
    "success": "Success",
    "error": "Error",
    "refused": "Refused",
    "unavailable": "Not reached",
    "unknown": "Outcome unknown",
}
MASK = "••••"
ACTOR = "audit_actor"  # the key of the current `Actor` on `flask.g`
_SECRET_WORDS = ("password", "token", "secret")
_SECRET_KEYS = frozenset({"code", "voucher_code"})
# The password of an address's user information (`scheme://user:password@host`): up to the last
# `@` before the path, as URL parsers read the host.
_URL_PASSWORD = re.compile(r"([a-z][a-z0-9+.-]*://[^/?#\s:]*):[^/?#\s]*@", re.IGNORECASE)


@dataclass(frozen=True)
class Actor:
    """Who acts (None: nobody signed in) and the client address the request came from."""

    user: User | None = None
    remote_address: str | None = None


def act_as(actor: Actor) -> None:
    """Make `actor` the one that later events of this request (or app context) belong to."""
    setattr(g, ACTOR, actor)


def current_actor() -> Actor:
    """The actor the web kit named for this request; nobody, from nowhere, otherwise."""
    return g.get(ACTOR, Actor()) if has_app_context() else Actor()


def is_secret(key: str) -> bool:
    name = key.lower()
    return name in _SECRET_KEYS or any(word in name for word in _SECRET_WORDS)


def masked(parameters: Mapping[str, object]) -> dict[str, str | None]:
    """The parameters as stored: text values, secrets replaced by a mask.

    A secret left empty was not given (a user changed without a new password): it is left out,
    as a mask would say that one was set.
    """
    return {
        key: _masked_value(key, value)
        for key, value in parameters.items()
        if value or not is_secret(key)
    }


def _masked_value(key: str, value: object) -> str | None:
    if value is None:
        return None
    if is_secret(key):
        return mask_token(str(value)) if "token" in key.lower() else MASK
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, list | tuple | set | frozenset):
        return without_url_passwords(", ".join(str(item) for item in value))
    return without_url_passwords(str(value))


def without_url_passwords(text: str) -> str:
    """`text` with the password of any address in it masked (`https://user:••••@host`): an
    address typed into a form (a refused webhook URL) may carry one."""
    return _URL_PASSWORD.sub(rf"\1:{MASK}@", text)


def _scrubbed(text: str, parameters: Mapping[str, object]) -> str:
    """`text` without the value of any secret parameter (an API message could echo one)."""
    for key, value in parameters.items():
        if is_secret(key) and value:
            text = text.replace(str(value), MASK)
    return text


def _outcome(error: ApiFailure | str | None) -> tuple[str, int | None, str | None]:
    if error is None:
        return "success", None, None
    if isinstance(error, str):
        return "refused", None, error
    if isinstance(error, ApiRefusal):
        return "error", error.code, error.message
    reached = isinstance(error, ApiUnavailable) and error.request_sent
    return ("unknown" if reached else "unavailable"), None, error.message


def record(
    action: str,
    *,
    parameters: Mapping[str, object] | None = None,
    error: ApiFailure | str | None = None,
    user: User | None = None,
    merchant: Merchant | None = None,
) -> AuditEvent:
    """Write one event of the audit log and commit it (see the module's docstring)."""
    event = new_event(action, parameters=parameters, error=error, user=user, merchant=merchant)
    db.session.add(event)
    db.session.commit()
    return event


def new_event(
    action: str,
    *,
    parameters: Mapping[str, object] | None = None,
    error: ApiFailure | str | None = None,
    user: User | None = None,
    merchant: Merchant | None = None,
) -> AuditEvent:
    """The event `record` writes, masked and scrubbed, not yet added to the session, so that
    many can be written in one transaction."""
    if action not in ACTIONS:
        raise ValueError(
            f"unknown audit action {action!r}; add it to portal.identity.rules.audit.ACTIONS"
        )
    actor = current_actor()
    if user is None:
        user = actor.user
    parameters = parameters or {}
    outcome, code, message = _outcome(error)
    return AuditEvent(
        merchant_id=user.merchant_id if user is not None else (merchant and merchant.id),
        user_id=user.id if user is not None else None,
        user_email=user.email if user is not None else None,
        action=action,
        parameters=masked(parameters),
        outcome=outcome,
        error_code=code,
        error_message=without_url_passwords(_scrubbed(message, parameters)) if message else None,
        remote_address=actor.remote_address,
    )


@contextmanager
def recorded(action: str, parameters: Mapping[str, object]) -> Iterator[dict[str, object]]:
    """Record `action` around a block that calls the API; the block may add results."""
    details = dict(parameters)
    try:
        yield details
    except ApiFailure as error:
        record(action, parameters=details, error=error)
        raise
    record(action, parameters=details)

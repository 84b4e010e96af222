"""The hosted payment page `/pay/{operation_id}` and its redirect back to the shop (with the
redirect codes of docs/sandbox.md).

A tester pays in full, pays part, cancels or lets the invoice expire; flags reach the other
redirect codes. See docs/sandbox.md for the table of outcomes.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from flask import Blueprint, redirect, render_template, request, url_for

from . import db, payments, records
from .errors import OPERATION_NOT_FOUND, ApiError
from .money import format_units
from .records import CANCELED, CONFIRMED, EXPIRED, FAILED, PROCESSED, TX_CONFIRMED

bp = Blueprint("payment_page", __name__)

CANCELED_CODE, NOT_FOUND_CODE, NO_APPLICATION_CODE, EXPIRED_CODE = 1, 2, 3, 4
HANDLED_CODE, NO_GATEWAYS_CODE, COMPANY_BANNED_CODE, GATEWAY_FAILED_CODE = 5, 6, 7, 8

OUTCOMES = {
    None: "Payment received. Thank you!",
    CANCELED_CODE: "Invoice canceled",
    NOT_FOUND_CODE: "Invoice not found",
    NO_APPLICATION_CODE: "Application not found",
    EXPIRED_CODE: "Invoice expired",
    HANDLED_CODE: "Invoice already handled",
    NO_GATEWAYS_CODE: "Payment gateways not available",
    COMPANY_BANNED_CODE: "Company banned",
    GATEWAY_FAILED_CODE: "Failed payment gateway",
}
_STATE_CODES = {CANCELED: CANCELED_CODE, EXPIRED: EXPIRED_CODE, CONFIRMED: HANDLED_CODE}
_STATE_CODES |= {FAILED: HANDLED_CODE, PROCESSED: HANDLED_CODE}


def with_status(url: str, code: int | None) -> str:
    """The shop's URL with `status=N` appended to its query; unchanged for a success."""
    if code is None:
        return url
    parts = urlsplit(url)
    query = f"{parts.query}&status={code}" if parts.query else f"status={code}"
    return urlunsplit(parts._replace(query=query))


def _leave(operation, code: int | None):
    """Send the payer back to the shop, or show the outcome when the shop gave no URL."""
    if operation["redirect_url"]:
        return redirect(with_status(operation["redirect_url"], code), 303)
    return render_template("outcome.html", code=code, message=OUTCOMES[code])


def _blocking_code(operation) -> int | None:
    """The redirect code that stops the page before any payment, if one applies."""
    flags = db.flags()
    if flags["company_banned"]:
        return COMPANY_BANNED_CODE
    if flags["application_banned"]:
        return NO_APPLICATION_CODE
    if not flags["payment_gateways_available"]:
        return NO_GATEWAYS_CODE
    return _STATE_CODES.get(operation["status"])


def _load(operation_id: str):
    payments.expire_due()
    try:
        return records.find("operations", operation_id, OPERATION_NOT_FOUND)
    except ApiError:
        return None


def _unknown_invoice():
    fallback = db.flag("unknown_invoice_redirect_url")
    if fallback:
        return redirect(with_status(fallback, NOT_FOUND_CODE), 303)
    message = OUTCOMES[NOT_FOUND_CODE]
    return render_template("outcome.html", code=NOT_FOUND_CODE, message=message), 404


def _remaining_units(operation) -> int:
    paid = payments.confirmed_units(db.get(), operation["id"])
    return max(payments.amount_due_units(operation) - paid, 0)


@bp.get("/pay/<operation_id>")
def show(operation_id: str):
    operation = _load(operation_id)
    if operation is None:
        return _unknown_invoice()
    code = _blocking_code(operation)
    if code is not None:
        return _leave(operation, code)
    return render_template(
        "pay.html",
        operation=operation,
        due=format_units(payments.amount_due_units(operation)),
        remaining=format_units(_remaining_units(operation)),
    )


@bp.post("/pay/<operation_id>")
def act(operation_id: str):
    operation = _load(operation_id)
    if operation is None:
        return _unknown_invoice()
    code = _blocking_code(operation)
    if code is not None:
        return _leave(operation, code)
    action = request.form.get("action")
    if action in ("pay_full", "pay_part") and db.flag("payment_gateway_fails"):
        payments.end_operation(operation["id"], FAILED)
        return _leave(operation, GATEWAY_FAILED_CODE)
    if action == "pay_full":
        payments.receive_transaction(
            operation["id"], _remaining_units(operation), None, TX_CONFIRMED
        )
        return _leave(operation, None)
    if action == "pay_part":
        part = max(_remaining_units(operation) // 2, 1)
        payments.receive_transaction(operation["id"], part, None, TX_CONFIRMED)
        return redirect(url_for(".show", operation_id=operation_id), 303)
    if action == "cancel":
        payments.end_operation(operation["id"], CANCELED)
        return _leave(operation, CANCELED_CODE)
    if action == "expire":
        payments.end_operation(operation["id"], EXPIRED)
        return _leave(operation, EXPIRED_CODE)
    return render_template("outcome.html", code=None, message="Unknown action"), 400

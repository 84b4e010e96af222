"""Operations: list, record, create, and the actions that change an operation.

The actions ask for confirmation first: the first POST only shows what would be sent; the POST
from the confirmation (with `confirm`) sends it. With htmx the operation is shown again in
place; without JavaScript the browser is redirected to it (Post/Redirect/Get). Link and reject
posted from the attention list (`from=attention`) ask and answer on that list instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import lru_cache, partial
from typing import Any

import segno
from flask import abort, current_app, flash, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response
from wtforms import Field

from portal.api import (
    ApiFailure,
    ApiRefusal,
    ErrorCode,
    MerchantApiClient,
    Operation,
    Transaction,
)
from portal.identity.models import Role
from portal.money.models import IntentKind
from portal.money.rules import refunds
from portal.money.rules.currencies import CURRENCY_CODES
from portal.payments.pages.attention import routes as attention_list
from portal.payments.pages.operations import bp
from portal.payments.pages.operations.forms import (
    CancelForm,
    NewOperationForm,
    OperationFilters,
    RejectForm,
    TransactionsActionForm,
)
from portal.payments.pages.public_urls import checkout_url
from portal.payments.pages.timeline_words import lines
from portal.payments.rules import operation_actions
from portal.payments.rules.checkout_links import created_with_link, reserve_link
from portal.payments.rules.expiry import assumed_expiry
from portal.payments.rules.operation_actions import UnderpaymentNotAccepted, link_preview
from portal.payments.rules.operation_list import (
    MIRROR_FILTERS,
    MIRROR_SORTS,
    mirror_list,
    mirrored_operation,
    operation_pages,
    stated_operation_pages,
)
from portal.payments.rules.operation_money import WITHDRAWAL_CATEGORIES, can_change, money_of
from portal.payments.rules.rates import currencies_of
from portal.payments.rules.timeline import timeline
from portal.payments.rules.transaction_rates import rated_transactions
from portal.reports.rules.csv_rows import operation_columns, rated_transaction_columns
from portal.web.access import ALL_ROLES, roles
from portal.web.api_errors import (
    NOTHING_SENT,
    Check,
    handle_api_error,
    mirrored_or_404,
    read_or_mirror,
    record_or_404,
    unless_unavailable,
)
from portal.web.exports import list_download
from portal.web.idempotent_forms import IdempotentForm, refuse_used, send
from portal.web.lists import ApiList, Mirrored, render_list
from portal.web.merchant import current_api
from portal.web.rendering import page, polled_by, render_page, wants_fragment

MOVERS = (Role.OWNER, Role.OPERATOR)
CANCELABLE = "new"
PAGE, FRAGMENT = "operations/detail.html", "operations/_operation.html"
# The element of the operation page that asks for the operation again while it can change.
POLLER = "operation-poll"
POLL_SECONDS = 5
UNDERPAYMENT_WARNING = (
    "Tick the box to confirm: the linked transactions pay less than is due, and the operation "
    "would be confirmed for less."
)
PAID_ONES_WARNING = (
    "Tick the box to confirm: these transactions already count as paid, and the operation "
    "loses what they paid."
)
OPERATIONS = ApiList(
    OperationFilters,
    lambda api: partial(operation_pages, api, current_user.merchant),
    "operations/index.html",
    "operations/_results.html",
    lambda: Mirrored(
        partial(mirror_list, current_user.merchant_id), MIRROR_FILTERS, frozenset(MIRROR_SORTS)
    ),
)
# The operations export: each operation with its state, as the list's badge says it.
STATED_OPERATIONS = replace(
    OPERATIONS, fetch=lambda api: stated_operation_pages(api, current_user.merchant)
)
OPERATION = IdempotentForm(
    IntentKind.OPERATION,
    form_endpoint="operations.new",
    check="the operations list",
    check_url=lambda asked: url_for("operations.index", order_id=asked["order_id"]),
    record_url=lambda operation_id: url_for("operations.detail", operation_id=operation_id),
)


@bp.route("")
@roles(*ALL_ROLES)
def index() -> Response:
    """The operations matching the filters of the query string."""
    return render_list(OPERATIONS)


@bp.get("/export.csv")
@bp.get("/export.xlsx", endpoint="export_xlsx")
@roles(*ALL_ROLES)
def export_csv() -> Response:
    """Operations with their money, or with `detail=transactions` one row per transaction of
    those operations with its rate; values and rates in the merchant's reporting currency."""
    merchant = current_user.merchant
    if request.args.get("detail") == "transactions":
        return list_download(
            OPERATIONS,
            "transactions-of-operations",
            rated_transaction_columns(merchant.reporting_currency),
            rated_transactions(merchant),
        )
    return list_download(
        STATED_OPERATIONS, "operations", operation_columns(merchant.reporting_currency)
    )


def _operation_or_404(operation_id: str) -> Operation:
    return record_or_404(
        partial(current_api().get_operation, operation_id),
        ErrorCode.OPERATION_NOT_FOUND,
        "Operation not found",
    )


def _show(operation: Operation, status: int = 200, **context: object) -> Response:
    """The operation page, or for htmx the operation part of it.

    The selection form is a blank one unless a view passes its own (`formdata=None`: after an
    action nothing stays ticked). While the operation can still change and nothing waits for a
    confirmation, the page asks for it again every few seconds; a poll's answer lets the page
    keep the boxes ticked and the reason typed.
    """
    context.setdefault("action_form", TransactionsActionForm(formdata=None))
    context.setdefault("cancel_form", CancelForm())
    if operation.payment_url and operation.status == CANCELABLE:
        context["qr_code"] = qr_code(operation.payment_url)
    history = timeline(current_user.merchant_id, operation.id)
    # The timeline comes from the mirror, a sync behind the API: the page keeps asking until
    # the mirror has caught up with what it shows (it stops on its own without a mirror).
    waiting = can_change(operation.status) or history.behind(operation.updated_at)
    live = waiting and not context.get("confirming")
    money = money_of(current_user.merchant, operation)
    return render_page(
        PAGE,
        FRAGMENT,
        status,
        operation=operation,
        money=money,
        refundable=refunds.refusal(current_user.merchant, operation, money) is None,
        paying=operation.category not in WITHDRAWAL_CATEGORIES,
        expiry=assumed_expiry(
            operation, current_app.config["OPERATION_TTL_MINUTES"], datetime.now(UTC)
        ),
        poll_seconds=POLL_SECONDS if live else None,
        poller=POLLER,
        polled=polled_by(POLLER),
        timeline=lines(history),
        sync_seconds=current_app.config["SYNC_SECONDS"],
        **context,
    )


@lru_cache(maxsize=256)
def qr_code(url: str) -> str:
    """The link as a QR code, an SVG `data:` URI made on the server (no script, CSP-safe).

    Kept per link: encoding takes several milliseconds, and a page waiting for a payment asks
    for the same link every few seconds.
    """
    return segno.make(url, error="m").svg_data_uri(scale=4, border=2)


def _check(operation_id: str) -> Check:
    """Where to look when a change of the operation got no answer."""
    return Check("the operation", url_for(".detail", operation_id=operation_id))


def _done(operation_id: str, message: str) -> Response:
    """After a change: the operation again, in place (htmx) or by a redirect."""
    if wants_fragment():
        return _show(current_api().get_operation(operation_id), notice=message)
    flash(message, "success")
    return redirect(url_for(".detail", operation_id=operation_id))


@dataclass(frozen=True)
class Place:
    """Where a link or rejection asks for confirmation (`show`: operation, status, context) and
    where the person lands once it is sent (`done`: operation id, notice)."""

    show: Callable[..., Response]
    done: Callable[[str, str], Response]


OPERATION_PAGE = Place(_show, _done)
# The pages that post these actions from elsewhere, by a fixed name (the form's `from`), never
# by a URL taken from the request: nothing can send the person to an address of its choosing.
PLACES = {"attention": Place(attention_list.confirming, attention_list.acted)}


@bp.route("/<operation_id>")
@roles(*ALL_ROLES)
def detail(operation_id: str) -> Response:
    """Every field of the operation and its transactions; the mirror's copy while the payment
    service does not answer."""
    return _show(
        read_or_mirror(
            partial(_operation_or_404, operation_id),
            lambda: mirrored_or_404(
                mirrored_operation(current_user.merchant_id, operation_id), "Operation not found"
            ),
        )
    )


@bp.route("/new", methods=["GET", "POST"])
@roles(*MOVERS)
def new() -> Response:
    """Create an operation; without a redirect URL the customer returns to our checkout page."""
    api = current_api()
    form = NewOperationForm()
    # Without the rates (the payment service does not answer), the currencies the portal knows,
    # and a banner: the form can be filled in, and sent once the service is back.
    rates = unless_unavailable(api.get_rates)
    form.offer(currencies_of(rates) if rates is not None else list(CURRENCY_CODES))
    shown = {"form": form, "api_down": rates is None}
    if not form.validate_on_submit():
        return page("operations/new.html", 422 if form.is_submitted() else 200, **shown)
    if rates is None:  # it did not answer a moment ago: nothing is sent, the form stays filled
        return page("operations/new.html", 502, error=NOTHING_SENT, **shown)
    try:
        operation = _create_once(api, form)
    except ApiFailure as failure:
        refused = handle_api_error(failure, form, at=_concerned_field(failure, form))
        return page("operations/new.html", refused.status, error=refused.error, **shown)
    flash(f"Operation {operation.id} was created. Give the customer its payment link.")
    return redirect(url_for(".detail", operation_id=operation.id))


def _concerned_field(failure: ApiFailure, form: NewOperationForm) -> Field | None:
    """Code 7 (operation not created) is said next to the payment currency: a currency the
    customer cannot pay in is the one reason the API's sandbox gives for it."""
    if isinstance(failure, ApiRefusal) and failure.code == ErrorCode.OPERATION_NOT_CREATED:
        return form.payment_currency
    return None


def _create_once(api: MerchantApiClient, form: NewOperationForm) -> Operation:
    """Create the operation once per form shown, after reserving its checkout link."""
    refuse_used(OPERATION, form.intent.data)
    link = None
    if not form.redirect_url.data:
        link = reserve_link(current_user.merchant, form.order_id.data)
    asked = {
        "amount": form.amount.data,
        "currency": form.currency.data,
        "order_id": form.order_id.data,
        "payment_currency": form.paid_in(),
        "redirect_url": form.redirect_url.data or (checkout_url(link) if link else None),
    }
    create = partial(created_with_link, link, partial(api.create_operation, **asked))
    return send(OPERATION, form.intent.data, asked, create)


def _chosen(operation: Operation, form: TransactionsActionForm) -> list[Transaction]:
    """The transactions ticked in `form` (validated against those of the operation)."""
    ids = form.transaction_id.data
    return [transaction for transaction in operation.transactions if transaction.id in ids]


def _transactions_action(
    operation_id: str, form_class: type[TransactionsActionForm], action: str
) -> Response:
    """Link or reject: check the selection, ask for confirmation, then send; all of it on the
    page the form came from."""
    place = PLACES.get(request.form.get("from", ""), OPERATION_PAGE)
    operation = _operation_or_404(operation_id)
    form = form_class()
    form.offer([transaction.id for transaction in operation.transactions])
    if not form.validate_on_submit():
        return place.show(operation, 422, action_form=form)
    ids = form.transaction_id.data
    chosen = _chosen(operation, form)
    asking: dict[str, Any] = {"action_form": form, "confirming": action, "chosen": chosen}
    if action == "link":
        asking["preview"] = link_preview(current_user.merchant, operation, ids)
    paid_ones = [transaction for transaction in chosen if _pays(transaction)]
    if action == "reject" and paid_ones:  # its own warning, and its own box to tick
        asking["paid_ones"] = paid_ones
        if form.confirm.data and not form.paid_ones_too.data:
            form.paid_ones_too.errors = [PAID_ONES_WARNING]
            return place.show(operation, 422, **asking)
    if not form.confirm.data:
        return place.show(operation, **asking)
    api = current_api()
    try:
        if action == "link":
            operation_actions.link(
                api,
                current_user.merchant,
                current_user.id,
                operation,
                ids,
                form.accepted_underpayment(),
            )
        else:
            operation_actions.reject(
                api, current_user.merchant_id, current_user.id, operation, ids, form.reason.data
            )
    except UnderpaymentNotAccepted as refused:
        asking["preview"] = refused.preview
        form.accept_underpayment.errors = [UNDERPAYMENT_WARNING]
        return place.show(operation, 422, **asking)
    except ApiFailure as failure:
        refusal = handle_api_error(failure, form, _check(operation_id))
        form.transaction_id.data = []  # whatever happened, nothing stays ticked for the next one
        operation = api.get_operation(operation_id)
        return place.show(operation, refusal.status, action_form=form, error=refusal.error)
    count = len(ids)
    noun = "transaction" if count == 1 else "transactions"
    verb = "linked to the operation" if action == "link" else "rejected"
    return place.done(operation_id, f"{count} {noun} {verb}.")


def _pays(transaction: Transaction) -> bool:
    """A transaction that counts as paid: rejecting it takes its amount off the operation."""
    return transaction.linked or transaction.status == "confirmed"


@bp.route("/<operation_id>/link-transactions", methods=["POST"])
@roles(*MOVERS)
def link_transactions(operation_id: str) -> Response:
    return _transactions_action(operation_id, TransactionsActionForm, "link")


@bp.route("/<operation_id>/reject-transactions", methods=["POST"])
@roles(*MOVERS)
def reject_transactions(operation_id: str) -> Response:
    return _transactions_action(operation_id, RejectForm, "reject")


@bp.route("/<operation_id>/cancel", methods=["POST"])
@roles(*MOVERS)
def cancel(operation_id: str) -> Response:
    """Cancel after confirmation; a refusal is explained above the operation as it stands now."""
    operation = _operation_or_404(operation_id)
    form = CancelForm()
    if not form.validate_on_submit():
        abort(400)
    if not form.confirm.data:
        return _show(operation, confirming="cancel")
    api = current_api()
    try:
        operation_actions.cancel(api, current_user.merchant_id, current_user.id, operation)
    except ApiFailure as failure:
        refused = handle_api_error(failure, form, _check(operation_id))
        operation = api.get_operation(operation_id)
        return _show(operation, refused.status, error=refused.error)
    return _done(operation_id, "The operation was canceled.")

"""The refund form of an operation, and a refund's page with its actions."""

from __future__ import annotations

from functools import partial

from flask import abort, current_app, flash, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import ErrorCode, Operation
from portal.identity.models import Role
from portal.identity.rules import audit
from portal.money.models import Refund, RefundStage
from portal.money.pages.refunds import bp
from portal.money.pages.refunds.forms import (
    CancelRefundForm,
    NewLinkForm,
    RefundForm,
    RevealLinkForm,
)
from portal.money.rules import approvals, refunds, withdrawal_figures
from portal.money.rules.currencies import address_shape
from portal.payments.rules.operation_money import OperationMoney, money_of
from portal.web.access import roles
from portal.web.address_book import not_in_book
from portal.web.api_errors import record_or_404
from portal.web.merchant import current_api
from portal.web.rendering import page
from portal.web.step_up import form_refused

MOVERS = (Role.OWNER, Role.OPERATOR)


def _operation(operation_id: str) -> Operation:
    return record_or_404(
        partial(current_api().get_operation, operation_id),
        ErrorCode.OPERATION_NOT_FOUND,
        "Operation not found",
    )


def claim_url(token: str) -> str:
    """The claim page of a token, as the customer opens it."""
    root = current_app.config.get("PUBLIC_URL") or request.url_root
    return root.rstrip("/") + url_for("refund_claims.claim", token=token)


@bp.route("/new/<operation_id>", methods=["GET", "POST"])
@roles(*MOVERS)
def new(operation_id: str) -> Response:
    """The form: how much goes back and to whom, with what the operation can still give back,
    today's rate and the estimated network fee (the merchant's). Sending it takes a fresh
    second factor from a user who has one: a refund sends the wallet's money."""
    operation = _operation(operation_id)
    merchant = current_user.merchant
    money = money_of(merchant, operation)
    left = refunds.refundable(merchant, operation, money)
    form = RefundForm()
    status = form_refused(form, current_user._get_current_object(), purpose="refund")
    if status is None:
        try:
            refund = _request(form, operation, money)
        except refunds.RefundRefused as refused:
            form.form_errors.append(str(refused))
            status = 422
        else:
            return redirect(url_for("refunds.show", refund_id=refund.id))
    return page(
        "refunds/new.html",
        status,
        form=form,
        operation=operation,
        money=money,
        left=left,
        reporting=merchant.reporting_currency,
        rate_now=refunds.rate_now(merchant, money.currency),
        fee=withdrawal_figures.figures(merchant, money.currency).estimated_fee,
    )


def _request(form: RefundForm, operation: Operation, money: OperationMoney) -> Refund:
    """The refund the form asks for; its claim link waits on the refund's page."""
    address = form.address.data or None
    shape = address_shape(money.currency)
    if address and shape and not shape.fits(address):
        raise refunds.RefundRefused(f"Enter {shape.described}.")
    unusable = address and not_in_book(current_user.merchant, money.currency, address)
    if unusable:
        raise refunds.RefundRefused(unusable)
    refund = refunds.request(
        current_user.merchant,
        current_user._get_current_object(),
        operation,
        money,
        refunds.Basis(form.basis.data),
        form.amount.data,
        address=address,
        email=form.email.data or None,
        link=claim_url,
    )
    if refund.token_hash:
        flash("Requested: show the claim link below and give it to the customer.", "success")
    if refund.stage is RefundStage.AWAITING_APPROVAL:
        approvals.hold_refund(refund, current_user._get_current_object())
    return refund


def _refund(refund_id: int) -> Refund:
    refund = refunds.find(current_user.merchant, refund_id)
    if refund is None:
        abort(404)
    return refund


def _show(
    refund: Refund, status: int = 200, *, revealed: bool = False, **forms: object
) -> Response:
    """The refund's page; its claim link only when `revealed` (`link`)."""
    token = refunds.link_token(refund) if revealed else None
    forms.setdefault("reveal_form", RevealLinkForm(formdata=None))
    return page(
        "refunds/show.html",
        status,
        refund=refund,
        state=refunds.state_of(refund),
        cancelable=refunds.cancelable(refund),
        reads_link=refunds.reads_link(refund, current_user),
        link=claim_url(token) if token else None,
        cancel_form=CancelRefundForm(formdata=None),
        link_form=NewLinkForm(formdata=None),
        approval=approvals.of_refund(refund),
        **forms,
    )


@bp.route("/<int:refund_id>")
@roles(*MOVERS)
def show(refund_id: int) -> Response:
    """Where the refund stands, with what can still be done to it."""
    return _show(_refund(refund_id))


@bp.route("/<int:refund_id>/claim-link", methods=["GET", "POST"])
@roles(*MOVERS)
def link(refund_id: int) -> Response:
    """Show the claim link to the owners and to who asked, after a fresh second factor from a
    user who has one; audited. A stolen session alone reads no link."""
    refund = _refund(refund_id)
    if not refunds.reads_link(refund, current_user):
        abort(403)
    form = RevealLinkForm()
    status = form_refused(form, current_user._get_current_object(), purpose="refund_link")
    if status:
        return _show(refund, status, reveal_form=form)
    audit.record("refund.reveal_link", parameters={"refund_id": refund.id})
    return _show(refund, revealed=True)


@bp.post("/<int:refund_id>/cancel")
@roles(*MOVERS)
def cancel(refund_id: int) -> Response:
    """Cancel a refund nothing was sent for; a sent one stays as it is."""
    refund = _refund(refund_id)
    if not CancelRefundForm().validate_on_submit():
        abort(400)
    if refunds.cancel(refund):
        flash("The refund was canceled: nothing will be sent.", "success")
    else:
        flash("This refund can no longer be canceled. Here is where it stands.", "info")
    return redirect(url_for(".show", refund_id=refund.id))


@bp.post("/<int:refund_id>/link")
@roles(*MOVERS)
def new_link(refund_id: int) -> Response:
    """A fresh claim link (the old one stops working), mailed again when the e-mail is known."""
    refund = _refund(refund_id)
    if not refunds.reads_link(refund, current_user):
        abort(403)
    if not NewLinkForm().validate_on_submit():
        abort(400)
    if refunds.new_link(refund, claim_url):
        flash(
            "A new claim link was made: show it below. The old one no longer works.",
            "success",
        )
    else:
        flash("This refund no longer waits for the customer's address.", "info")
    return redirect(url_for(".show", refund_id=refund.id))

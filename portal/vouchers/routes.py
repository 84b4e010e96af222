"""Voucher pages. Codes are secrets: shown only on request, never logged or audited in clear."""

from __future__ import annotations

from functools import partial

from flask import flash, redirect, render_template, url_for
from werkzeug.wrappers import Response

from portal import audit
from portal.access import ALL_ROLES, roles
from portal.api import (
    NOT_FOUND_VOUCHER,
    VALIDATION_ERROR,
    VOUCHER_STATUSES,
    ApiError,
    ApiUnavailable,
    Voucher,
)
from portal.explain import explain, record_or_404, unanswered
from portal.fields import add_api_field_errors
from portal.formatting import money
from portal.layout import PageAnswer, render_page
from portal.listing import render_list
from portal.models import Role
from portal.services.api import current_api
from portal.vouchers import bp
from portal.vouchers.forms import CancelVoucherForm, NewVoucherForm, PayOffForm, VoucherFilters

MOVERS = (Role.OWNER, Role.OPERATOR)


@bp.route("")
@roles(*ALL_ROLES)
def index() -> Response:
    """The voucher list with every filter and sort of the API; bad filters send nothing."""
    return render_list(
        VoucherFilters,
        current_api().list_vouchers,
        "vouchers/index.html",
        "vouchers/_results.html",
        voucher_statuses=VOUCHER_STATUSES,
    )


def _voucher(voucher_id: str) -> Voucher:
    """The voucher from the API; its own 404 page when the API does not know the id."""
    return record_or_404(
        partial(current_api().get_voucher, voucher_id), NOT_FOUND_VOUCHER, "Voucher not found"
    )


@bp.route("/<voucher_id>")
@roles(*ALL_ROLES)
def show(voucher_id: str) -> Response:
    """A voucher, its code masked."""
    voucher = _voucher(voucher_id)
    return render_page("vouchers/show.html", "vouchers/_code.html", voucher=voucher)


@bp.route("/<voucher_id>/code")
@roles(*MOVERS)
def code(voucher_id: str) -> Response:
    """The same page with the code revealed (for htmx, only the code's part of it)."""
    voucher = _voucher(voucher_id)
    return render_page("vouchers/show.html", "vouchers/_code.html", voucher=voucher, reveal=True)


@bp.route("/new", methods=["GET", "POST"])
@roles(*MOVERS)
def new() -> PageAnswer:
    form = NewVoucherForm()
    error = None
    if form.validate_on_submit():
        parameters = {"amount": form.amount.data, "currency": form.currency.data}
        try:
            with audit.recorded("voucher.create", parameters) as details:
                voucher = current_api().create_voucher(form.amount.data, form.currency.data)
                details["voucher_id"] = voucher.id
        except ApiUnavailable as failure:
            return unanswered(failure, "the voucher list", url_for("vouchers.index"))
        except ApiError as refusal:
            if refusal.code != VALIDATION_ERROR or not add_api_field_errors(form, refusal.errors):
                error = explain(refusal)
            return render_template("vouchers/new.html", form=form, error=error), 400
        flash(
            f"Voucher {voucher.id} for {money(voucher.amount, voucher.currency)} is created.",
            "success",
        )
        return redirect(url_for("vouchers.show", voucher_id=voucher.id))
    page = render_template("vouchers/new.html", form=form)
    return (page, 422) if form.is_submitted() else page


@bp.route("/<voucher_id>/cancel", methods=["GET", "POST"])
@roles(*MOVERS)
def cancel(voucher_id: str) -> PageAnswer:
    """Ask for confirmation on its own page, then cancel the voucher."""
    voucher = _voucher(voucher_id)
    form = CancelVoucherForm()
    if form.validate_on_submit():
        try:
            with audit.recorded("voucher.cancel", {"voucher_id": voucher.id}):
                current_api().cancel_voucher(voucher.id)
        except ApiUnavailable as failure:
            return unanswered(
                failure, "the voucher", url_for("vouchers.show", voucher_id=voucher.id)
            )
        except ApiError as refusal:
            page = render_template(
                "vouchers/cancel.html", form=form, voucher=voucher, error=explain(refusal)
            )
            return page, 400
        flash(f"Voucher {voucher.id} is canceled; its amount is back in the wallet.", "success")
        return redirect(url_for("vouchers.show", voucher_id=voucher.id))
    return render_template("vouchers/cancel.html", form=form, voucher=voucher)


@bp.route("/payoff", methods=["GET", "POST"])
@roles(*MOVERS)
def payoff() -> PageAnswer:
    """Pay off a voucher by its code: the amount goes to the wallet of its currency."""
    form = PayOffForm()
    if form.validate_on_submit():
        try:
            with audit.recorded("voucher.pay_off", {"code": form.code.data}) as details:
                voucher = current_api().pay_off_voucher(form.code.data)
                details["voucher_id"] = voucher.id
        except ApiUnavailable as failure:
            return unanswered(failure, "the voucher list", url_for("vouchers.index"))
        except ApiError as refusal:
            form.code.errors.append(explain(refusal))
            return render_template("vouchers/payoff.html", form=form), 400
        flash(
            f"Voucher {voucher.id} is paid off: {money(voucher.amount, voucher.currency)} "
            "went to your wallet.",
            "success",
        )
        return redirect(url_for("vouchers.show", voucher_id=voucher.id))
    page = render_template("vouchers/payoff.html", form=form)
    return (page, 422) if form.is_submitted() else page

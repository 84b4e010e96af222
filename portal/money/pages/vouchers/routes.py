"""Voucher pages. A code is bearer money: only owners create vouchers and reveal codes (with a
fresh two-factor code when they have two-factor on), audited; codes are never logged or audited
in clear. Operators and owners pay off the vouchers they receive."""

from __future__ import annotations

from functools import partial

from flask import flash, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import VOUCHER_LIST, ApiFailure, ErrorCode, Voucher
from portal.identity.models import Role
from portal.identity.rules import audit
from portal.money.models import IntentKind
from portal.money.pages.vouchers import bp
from portal.money.pages.vouchers.forms import (
    CancelVoucherForm,
    NewVoucherForm,
    PayOffForm,
    RevealCodeForm,
    VoucherFilters,
)
from portal.money.rules import approvals, vouchers
from portal.money.rules import limits as owner_limits
from portal.money.rules.currencies import exchange_currencies
from portal.reports.rules.csv_rows import VOUCHER_COLUMNS
from portal.web.access import ALL_ROLES, roles
from portal.web.api_errors import Check, handle_api_error, record_or_404, unless_unavailable
from portal.web.exports import list_download
from portal.web.formatting import money
from portal.web.idempotent_forms import IdempotentForm, refuse_used, send
from portal.web.lists import ApiList, render_list
from portal.web.merchant import current_api
from portal.web.rendering import page, render_page
from portal.web.step_up import form_refused, step_up_refused

MOVERS = (Role.OWNER, Role.OPERATOR)
ALONE = (
    "Not created: this voucher is above the owners' limits, so another owner must approve it, "
    f"and {owner_limits.NO_OTHER_OWNER}. {owner_limits.WAY_OUT}"
)
HELD = (
    "The voucher is above the owners' limits: it waits for an owner other than you, and is "
    "created once approved. Nothing was sent."
)
VOUCHER = IdempotentForm(
    IntentKind.VOUCHER,
    form_endpoint="vouchers.new",
    check="the voucher list",
    check_url=lambda _parameters: url_for("vouchers.index"),
    record_url=lambda voucher_id: url_for("vouchers.show", voucher_id=voucher_id),
)


VOUCHERS = ApiList(
    VoucherFilters,
    lambda api: partial(api.fetch_page, VOUCHER_LIST),
    "vouchers/index.html",
    "vouchers/_results.html",
)


@bp.route("")
@roles(*ALL_ROLES)
def index() -> Response:
    """The voucher list with every filter and sort of the API; bad filters send nothing."""
    return render_list(VOUCHERS)


def _voucher(voucher_id: str) -> Voucher:
    """The voucher from the API; its own 404 page when the API does not know the id."""
    return record_or_404(
        partial(current_api().get_voucher, voucher_id),
        ErrorCode.VOUCHER_NOT_FOUND,
        "Voucher not found",
    )


@bp.route("/<voucher_id>")
@roles(*ALL_ROLES)
def show(voucher_id: str) -> Response:
    """A voucher, its code masked."""
    return _voucher_page(voucher=_voucher(voucher_id))


# The voucher page, or for htmx the code's part of it.
_voucher_page = partial(render_page, "vouchers/show.html", "vouchers/_code.html")


@bp.route("/<voucher_id>/code", methods=["GET", "POST"])
@roles(Role.OWNER)
def code(voucher_id: str) -> Response:
    """Ask to reveal the code (with two-factor on, for a fresh code); the POST shows it, audited.

    For htmx, only the code's part of the voucher page.
    """
    voucher = _voucher(voucher_id)
    form = RevealCodeForm()
    status = form_refused(form, current_user._get_current_object(), purpose="voucher_code")
    if status:
        return _voucher_page(status, voucher=voucher, reveal_form=form)
    audit.record("voucher.reveal_code", parameters={"voucher_id": voucher.id})
    return _voucher_page(voucher=voucher, reveal=True)


@bp.get("/new")
@roles(Role.OWNER)
def new() -> Response:
    """The voucher's amount and currency (the currencies the service exchanges), to review;
    filled in again from the review's **Change the details**."""
    return _form_page(NewVoucherForm(formdata=request.args or None, meta={"csrf": False}))


@bp.get("/review")
@roles(Role.OWNER)
def review() -> Response:
    """What the voucher takes from which wallet, before anything is sent (a GET: it changes
    nothing); **Create voucher** posts the same amount, currency and key, with the second
    factor, to `create`."""
    form = NewVoucherForm(formdata=request.args, meta={"csrf": False})
    if not form.validate():
        return _form_page(form, 422)
    return page("vouchers/review.html", form=form)


@bp.post("/new")
@roles(Role.OWNER)
def create() -> Response:
    """Create the reviewed voucher once per form shown; with two-factor on, after a fresh
    code asked on the review."""
    form = NewVoucherForm()
    if not form.validate():
        return _form_page(form, 422)
    amount, currency = form.amount.entered, form.currency.data
    try:
        refuse_used(VOUCHER, form.intent.data)  # a form sent before needs no new code
        user = current_user._get_current_object()
        checked = owner_limits.check(user.merchant, currency, amount)
        alone = checked.reason is not None and not owner_limits.other_owners(user)
        if alone:  # before the code: none is used up
            return page("vouchers/review.html", 422, form=form, error=ALONE)
        status = step_up_refused(form.code, user, purpose="voucher")
        if status:
            return page("vouchers/review.html", status, form=form)
        owner_limits.serialize(user.merchant)  # this check and the claim or hold are one step
        checked = owner_limits.check(user.merchant, currency, amount)
        if checked.reason is not None and not owner_limits.other_owners(user):
            return page("vouchers/review.html", 422, form=form, error=ALONE)
        if checked.reason is not None:
            held = approvals.hold_voucher(user, form.intent.data, amount, currency, checked)
            flash(HELD, "info")
            return redirect(url_for("approvals.show", approval_id=held.id))
        parameters = {"amount": amount, "currency": currency}
        create = partial(current_api().create_voucher, amount, currency)
        voucher = send(VOUCHER, form.intent.data, parameters, create)
    except ApiFailure as failure:
        refused = handle_api_error(failure, form)
        return _form_page(form, refused.status, refused.error)
    flash(
        f"Voucher {voucher.id} for {money(voucher.amount, voucher.currency)} is created.",
        "success",
    )
    return redirect(url_for("vouchers.show", voucher_id=voucher.id))


def _form_page(form: NewVoucherForm, status: int = 200, error: str | None = None) -> Response:
    """The form, offering the currencies the service's exchange rates name (all the portal
    knows while they cannot be read)."""
    rates = unless_unavailable(current_api().get_exchange_rates)
    if rates is not None:
        form.currency.offer(exchange_currencies(rates))
    return page("vouchers/new.html", status, form=form, error=error)


@bp.route("/<voucher_id>/cancel", methods=["GET", "POST"])
@roles(*MOVERS)
def cancel(voucher_id: str) -> Response:
    """Ask for confirmation on its own page, then cancel the voucher."""
    voucher = _voucher(voucher_id)
    form = CancelVoucherForm()
    if not form.validate_on_submit():
        return page("vouchers/cancel.html", form=form, voucher=voucher)
    url = url_for("vouchers.show", voucher_id=voucher.id)
    try:
        with audit.recorded("voucher.cancel", {"voucher_id": voucher.id}):
            current_api().cancel_voucher(voucher.id)
    except ApiFailure as failure:
        refused = handle_api_error(failure, form, Check("the voucher", url))
        return page(
            "vouchers/cancel.html", refused.status, form=form, voucher=voucher, error=refused.error
        )
    flash(f"Voucher {voucher.id} is canceled; its amount is back in the wallet.", "success")
    return redirect(url)


@bp.route("/payoff", methods=["GET", "POST"])
@roles(*MOVERS)
def payoff() -> Response:
    """Pay off a voucher by its code: the amount goes to the wallet of its currency."""
    form = PayOffForm()
    if not form.validate_on_submit():
        return page("vouchers/payoff.html", 422 if form.is_submitted() else 200, form=form)
    try:
        # The audit event's commit is the one of the payoff's movement in the ledger.
        with audit.recorded("voucher.pay_off", {"code": form.code.data}) as details:
            voucher = vouchers.pay_off(current_api(), current_user.merchant, form.code.data)
            details["voucher_id"] = voucher.id
    except ApiFailure as failure:
        check = Check("the voucher list", url_for("vouchers.index"))
        return page(
            "vouchers/payoff.html",
            handle_api_error(failure, form, check, at=form.code).status,
            form=form,
        )
    flash(
        f"Voucher {voucher.id} is paid off: {money(voucher.amount, voucher.currency)} "
        "went to your wallet.",
        "success",
    )
    return redirect(url_for("vouchers.show", voucher_id=voucher.id))


@bp.get("/export.csv")
@bp.get("/export.xlsx", endpoint="export_xlsx")
@roles(*ALL_ROLES)
def export_csv() -> Response:
    """The vouchers of the list's filters, without their codes."""
    return list_download(VOUCHERS, "vouchers", VOUCHER_COLUMNS)

"""Withdrawal pages: new (form), review and confirm (one-time intent), and the list."""

from __future__ import annotations

from decimal import Decimal

from flask import abort, flash, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import ApiFailure
from portal.identity.models import Role
from portal.money.models import IntentState, WithdrawalIntent
from portal.money.pages.withdrawals import bp
from portal.money.pages.withdrawals.forms import (
    ConfirmWithdrawalForm,
    ReportingLimitsForm,
    WithdrawalForm,
    WithdrawalLimitForm,
)
from portal.money.rules import approvals, controls, withdrawal_figures, withdrawals
from portal.money.rules import limits as owner_limits
from portal.money.rules.currencies import WITHDRAWAL_WALLETS, money
from portal.reports.rules.csv_rows import WITHDRAWAL_COLUMNS
from portal.web.access import roles
from portal.web.address_book import not_in_book
from portal.web.api_errors import Check, handle_api_error
from portal.web.controls import waits_words
from portal.web.exports import local_list_download
from portal.web.lists import local_page
from portal.web.merchant import current_api
from portal.web.rendering import page
from portal.web.step_up import form_refused, step_up_refused


@bp.route("")
@roles(Role.OWNER, Role.ACCOUNTANT)
def index() -> Response:
    """The withdrawals confirmed through the portal, with their outcome: accountants read it,
    only owners make or open one (a pending one is a review page with its confirmation)."""
    return page(
        "withdrawals/index.html", page=local_page(withdrawals.confirmed(current_user.merchant))
    )


@bp.route("/new", methods=["GET", "POST"])
@roles(Role.OWNER)
def new() -> Response:
    """The form; a valid one becomes a pending intent, reviewed on its own page, unless it is
    above the owners' limits and no other owner could approve it. A Max button (`max`: its
    wallet) only fills the amount in."""
    posted = request.method == "POST"
    if posted and "max" in request.form:
        return _form_page(200, _filled_to_most(request.form["max"]))
    form = WithdrawalForm(formdata=request.form if posted else request.args)
    if not (posted and form.validate()):
        return _form_page(422 if posted else 200, form)
    unusable = not_in_book(current_user.merchant, form.wallet.data, form.address.data)
    if unusable:
        form.address.errors = [*form.address.errors, unusable]
        return _form_page(422, form)
    refused = _alone_over_limit(form.wallet.data, form.amount.entered)
    if refused:
        return _form_page(422, form, **refused)
    key = withdrawals.create(
        current_user.merchant,
        current_user,
        form.amount.entered,
        form.wallet.data,
        form.address.data,
    )
    return redirect(url_for("withdrawals.show", key=key))


def _alone_over_limit(wallet: str, amount: Decimal) -> dict[str, object] | None:
    """What the page says of an amount above a limit when no other owner could approve it
    (None when within the limits, or when another owner may approve)."""
    return _alone(owner_limits.check(current_user.merchant, wallet, amount), wallet)


def _alone(checked: owner_limits.Check, wallet: str) -> dict[str, object] | None:
    """`_alone_over_limit` of what the limits said already."""
    user = current_user._get_current_object()
    if checked.reason is None or owner_limits.other_owners(user):
        return None
    return {"held": checked, "held_figures": withdrawal_figures.figures(user.merchant, wallet)}


def _filled_to_most(wallet: str) -> WithdrawalForm:
    """The form as posted, with the wallet of the Max button chosen and its amount the most the
    wallet can pay out with the estimated fee on top."""
    if wallet not in WITHDRAWAL_WALLETS:
        abort(400)
    most = withdrawal_figures.figures(current_user.merchant, wallet).most
    amount = None if most is None else most.normalize()  # 0.3948, not 0.39480000
    return WithdrawalForm(
        formdata=None, amount=amount, wallet=wallet, address=request.form.get("address", "")
    )


def _form_page(status: int, form: WithdrawalForm, **shown: object) -> Response:
    """The new withdrawal page: its form, every wallet's figures and the daily limit form."""
    merchant = current_user.merchant
    shown.setdefault("limit_form", WithdrawalLimitForm(prefix="limit", formdata=None))
    shown.setdefault(
        "reporting_form",
        ReportingLimitsForm(
            prefix="reporting",
            formdata=None,
            per_withdrawal=merchant.limit_per_withdrawal,
            per_day=merchant.limit_per_day,
        ),
    )
    wallets = {
        currency: withdrawal_figures.figures(merchant, currency) for currency in WITHDRAWAL_WALLETS
    }
    pending = controls.waiting(merchant)
    return page(
        "withdrawals/new.html", status, form=form, wallets=wallets, pending=pending, **shown
    )


@bp.post("/limits")
@roles(Role.OWNER)
def limits() -> Response:
    """Set or clear a currency's own limits; an owner with two-factor on confirms with a fresh
    code, so a stolen session cannot lift a limit and then withdraw."""
    form = WithdrawalLimitForm(prefix="limit")
    status = form_refused(form, current_user._get_current_object(), purpose="withdrawal_limit")
    if status:
        return _form_page(status, WithdrawalForm(formdata=None), limit_form=form)
    wallet, limit = form.wallet.data, form.daily_limit.data
    user = current_user._get_current_object()
    change = controls.change_own_limits(user, wallet, form.per_withdrawal.data, limit)
    if change is not None:
        flash(waits_words(change, f"The {wallet} wallet's new limits apply"), "info")
    elif limit is None:
        flash(f"The {wallet} wallet has no daily limit of its own now.", "success")
    else:
        flash(f"The {wallet} wallet's daily limit is now {money(limit, wallet)}.", "success")
    return redirect(url_for("withdrawals.new", wallet=wallet))


@bp.post("/limits/reporting")
@roles(Role.OWNER)
def reporting_limits() -> Response:
    """Set or clear the limits in the reporting currency, confirmed with a fresh code."""
    form = ReportingLimitsForm(prefix="reporting")
    user = current_user._get_current_object()
    status = form_refused(form, user, purpose="withdrawal_limit")
    if status:
        return _form_page(status, WithdrawalForm(formdata=None), reporting_form=form)
    change = controls.change_limits(user, form.per_withdrawal.data, form.per_day.data)
    currency = user.merchant.reporting_currency
    if change is None:
        flash(f"The limits in {currency} are saved.", "success")
    else:
        flash(waits_words(change, f"The new limits in {currency} apply"), "info")
    return redirect(url_for("withdrawals.new"))


def _intent(key: str) -> WithdrawalIntent:
    intent = withdrawals.find(current_user.merchant, key)
    if intent is None:
        abort(404)
    return intent


@bp.route("/<key>")
@roles(Role.OWNER)
def show(key: str) -> Response:
    """The review page while pending (or its approval while one holds it), then what became
    of the withdrawal."""
    return _review(_intent(key))


def _review(intent: WithdrawalIntent, status: int = 200, **shown: object) -> Response:
    shown.setdefault("form", ConfirmWithdrawalForm())
    held = approvals.of_withdrawal(intent)
    return page("withdrawals/show.html", status, intent=intent, approval=held, **shown)


def _already_confirmed(key: str) -> Response:
    flash("This withdrawal was already confirmed. Here is where it stands.", "info")
    return redirect(url_for("withdrawals.show", key=key))


@bp.route("/<key>/confirm", methods=["POST"])
@roles(Role.OWNER)
def confirm(key: str) -> Response:
    """Send the intent once; any other confirmation (double click, resend) only sees it.

    A user with two-factor sign-in on confirms with a fresh code (not even the one that signed
    them in); a wrong or used code sends nothing and leaves the intent pending. An amount above
    the owners' limits is held for another owner's approval (the worker sends it once
    approved), or refused when there is no other owner.
    """
    intent = _intent(key)
    form = ConfirmWithdrawalForm()
    # Only the code can be invalid (too long; CSRF is checked before any view): a field error.
    status = None if form.validate() else 422
    if intent.state != IntentState.PENDING or approvals.of_withdrawal(intent):
        return _already_confirmed(key)
    user = current_user._get_current_object()
    unusable = not_in_book(current_user.merchant, intent.wallet, intent.address)
    if status is None and unusable:  # removed from the book since the review
        return _review(intent, 422, form=form, error=f"Not sent: {unusable}")
    alone = _alone_over_limit(intent.wallet, intent.amount)
    if status is None and alone:  # before the code: none is used up
        return _review(intent, 422, form=form, **alone)
    if status is None:
        status = step_up_refused(form.code, user, purpose="withdrawal")
    if status:
        return _review(intent, status, form=form)
    owner_limits.serialize(user.merchant)  # this check and the claim or hold are one step
    checked = owner_limits.check(user.merchant, intent.wallet, intent.amount)
    alone = _alone(checked, intent.wallet)
    if alone:  # a confirmation at the same moment took what the limits left
        return _review(intent, 422, form=form, **alone)
    if checked.reason is not None:
        approvals.hold_withdrawal(intent, user, checked)
        flash(
            "Above the limits: this withdrawal waits for the approval of another owner, who "
            "was mailed. Nothing is sent before.",
            "info",
        )
        return redirect(url_for("withdrawals.show", key=key))
    api = current_api()
    if not withdrawals.claim(intent, user):
        return _already_confirmed(key)
    try:
        withdrawals.send(intent, api)
    except ApiFailure as failure:
        retry = WithdrawalForm(
            formdata=None, amount=intent.amount, wallet=intent.wallet, address=intent.address
        )
        refused = handle_api_error(
            failure, retry, Check("the operations list", url_for("operations.index"))
        )
        if intent.state == IntentState.PENDING:  # nothing left: the review may be confirmed again
            return _review(intent, refused.status, form=form, error=refused.error)
        return _form_page(refused.status, retry, error=refused.error, refused=intent)
    flash("The withdrawal was sent.", "success")
    return redirect(url_for("withdrawals.show", key=key))


@bp.get("/export.csv")
@bp.get("/export.xlsx", endpoint="export_xlsx")
@roles(Role.OWNER, Role.ACCOUNTANT)
def export_csv() -> Response:
    """Every withdrawal confirmed through the portal, with its outcome, for the accounts."""
    return local_list_download(
        withdrawals.confirmed(current_user.merchant), "withdrawals", WITHDRAWAL_COLUMNS
    )

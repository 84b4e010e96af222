"""Withdrawal pages: new (form), review and confirm (one-time intent), and the list."""

from __future__ import annotations

from flask import abort, flash, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import ApiFailure
from portal.identity.models import Role
from portal.money.models import IntentState, WithdrawalIntent
from portal.money.pages.withdrawals import bp
from portal.money.pages.withdrawals.forms import (
    ConfirmWithdrawalForm,
    WithdrawalForm,
    WithdrawalLimitForm,
)
from portal.money.rules import withdrawal_figures, withdrawals
from portal.money.rules.currencies import WITHDRAWAL_WALLETS, money
from portal.reports.rules.csv_rows import WITHDRAWAL_COLUMNS
from portal.web.access import roles
from portal.web.api_errors import Check, handle_api_error
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
    """The form; a valid one within the owners' daily limit becomes a pending intent, reviewed
    on its own page. A Max button (`max`: its wallet) only fills the amount in."""
    posted = request.method == "POST"
    if posted and "max" in request.form:
        return _form_page(200, _filled_to_most(request.form["max"]))
    form = WithdrawalForm(formdata=request.form if posted else request.args)
    if not (posted and form.validate()):
        return _form_page(422 if posted else 200, form)
    wallet = withdrawal_figures.figures(current_user.merchant, form.wallet.data)
    if wallet.over_limit(form.amount.entered):
        return _form_page(422, form, over_limit=wallet)
    key = withdrawals.create(
        current_user.merchant,
        current_user,
        form.amount.entered,
        form.wallet.data,
        form.address.data,
    )
    return redirect(url_for("withdrawals.show", key=key))


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
    wallets = {
        currency: withdrawal_figures.figures(merchant, currency) for currency in WITHDRAWAL_WALLETS
    }
    return page("withdrawals/new.html", status, form=form, wallets=wallets, **shown)


@bp.post("/limits")
@roles(Role.OWNER)
def limits() -> Response:
    """Set or clear a wallet's daily limit; an owner with two-factor on confirms with a fresh
    code, so a stolen session cannot lift the limit and then withdraw."""
    form = WithdrawalLimitForm(prefix="limit")
    status = form_refused(form, current_user._get_current_object(), purpose="withdrawal_limit")
    if status:
        return _form_page(status, WithdrawalForm(formdata=None), limit_form=form)
    wallet, limit = form.wallet.data, form.daily_limit.data
    withdrawal_figures.set_daily_limit(current_user.merchant, wallet, limit)
    if limit is None:
        flash(f"The {wallet} wallet has no daily limit now.", "success")
    else:
        flash(f"The {wallet} wallet's daily limit is now {money(limit, wallet)}.", "success")
    return redirect(url_for("withdrawals.new", wallet=wallet))


def _intent(key: str) -> WithdrawalIntent:
    intent = withdrawals.find(current_user.merchant, key)
    if intent is None:
        abort(404)
    return intent


@bp.route("/<key>")
@roles(Role.OWNER)
def show(key: str) -> Response:
    """The review page while pending, then what became of the withdrawal."""
    return page("withdrawals/show.html", intent=_intent(key), form=ConfirmWithdrawalForm())


def _already_confirmed(key: str) -> Response:
    flash("This withdrawal was already confirmed. Here is where it stands.", "info")
    return redirect(url_for("withdrawals.show", key=key))


@bp.route("/<key>/confirm", methods=["POST"])
@roles(Role.OWNER)
def confirm(key: str) -> Response:
    """Send the intent once; any other confirmation (double click, resend) only sees it.

    A user with two-factor sign-in on confirms with a fresh code (not even the one that signed
    them in); a wrong or used code sends nothing and leaves the intent pending.
    """
    intent = _intent(key)
    form = ConfirmWithdrawalForm()
    # Only the code can be invalid (too long; CSRF is checked before any view): a field error.
    status = None if form.validate() else 422
    if intent.state != IntentState.PENDING:
        return _already_confirmed(key)
    user = current_user._get_current_object()
    wallet = withdrawal_figures.figures(user.merchant, intent.wallet)
    if status is None and wallet.over_limit(intent.amount):  # before the code: none is used up
        return page("withdrawals/show.html", 422, intent=intent, form=form, over_limit=wallet)
    if status is None:
        status = step_up_refused(form.code, user, purpose="withdrawal")
    if status:
        return page("withdrawals/show.html", status, intent=intent, form=form)
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
            return page(
                "withdrawals/show.html",
                refused.status,
                intent=intent,
                form=form,
                error=refused.error,
            )
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

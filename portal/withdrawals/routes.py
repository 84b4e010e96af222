"""Withdrawal pages: new (form), review and confirm (one-time intent), and the list."""

from __future__ import annotations

from flask import abort, flash, redirect, render_template, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import VALIDATION_ERROR, ApiError, ApiUnavailable
from portal.models import IntentState, Role, WithdrawalIntent
from portal.rules import two_factor
from portal.rules import withdrawals as intents
from portal.web.access import roles
from portal.web.fields import add_api_field_errors
from portal.web.lists import local_page
from portal.web.merchant import current_api
from portal.web.pages import PageAnswer
from portal.web.refusals import explain
from portal.withdrawals import bp
from portal.withdrawals.forms import ConfirmWithdrawalForm, WithdrawalForm


@bp.route("")
@roles(Role.OWNER)
def index() -> str:
    """The withdrawals confirmed through the portal, with their outcome."""
    page = local_page(intents.confirmed(current_user.merchant))
    return render_template("withdrawals/index.html", page=page)


@bp.route("/new", methods=["GET", "POST"])
@roles(Role.OWNER)
def new() -> PageAnswer:
    """The form; a valid one becomes a pending intent, reviewed on its own page."""
    form = WithdrawalForm(formdata=request.form if request.method == "POST" else request.args)
    if request.method == "POST" and form.validate():
        key = intents.create(
            current_user.merchant,
            current_user,
            form.amount.entered,
            form.wallet.data,
            form.address.data,
        )
        return redirect(url_for("withdrawals.show", key=key))
    page = render_template("withdrawals/new.html", form=form)
    return (page, 422) if request.method == "POST" else page


def _intent(key: str) -> WithdrawalIntent:
    intent = intents.find(current_user.merchant, key)
    if intent is None:
        abort(404)
    return intent


@bp.route("/<key>")
@roles(Role.OWNER)
def show(key: str) -> str:
    """The review page while pending, then what became of the withdrawal."""
    return render_template(
        "withdrawals/show.html", intent=_intent(key), form=ConfirmWithdrawalForm()
    )


def _already_confirmed(key: str) -> Response:
    flash("This withdrawal was already confirmed. Here is where it stands.", "info")
    return redirect(url_for("withdrawals.show", key=key))


@bp.route("/<key>/confirm", methods=["POST"])
@roles(Role.OWNER)
def confirm(key: str) -> PageAnswer:
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
    if status is None:
        status = two_factor.step_up_refused(form.code, user, purpose="withdrawal")
    if status:
        return render_template("withdrawals/show.html", intent=intent, form=form), status
    api = current_api()
    if not intents.claim(intent, user):
        return _already_confirmed(key)
    try:
        intents.send(intent, api)
    except ApiUnavailable as error:
        status = 504 if error.timeout else 502
        if not error.request_sent:
            error_text = "The payment service could not be reached, so nothing was sent."
            page = render_template(
                "withdrawals/show.html", intent=intent, form=form, error=error_text
            )
            return page, status
        return render_template("withdrawals/show.html", intent=intent, form=form), status
    except ApiError as error:
        retry = WithdrawalForm(
            formdata=None, amount=intent.amount, wallet=intent.wallet, address=intent.address
        )
        if error.code == VALIDATION_ERROR:
            add_api_field_errors(retry, error.errors)
        page = render_template("withdrawals/new.html", form=retry, error=explain(error))
        return page, error.http_status or 400
    flash("The withdrawal was sent.", "success")
    return redirect(url_for("withdrawals.show", key=key))

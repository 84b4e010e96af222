"""Owners connect the API and manage the merchant's users; every query stays in their merchant.

An owner with two-factor sign-in on confirms every change here with a fresh code
(`portal.web.step_up`). A stolen session cookie alone must not add an owner with a password of
the thief's, change a role or a password, turn off a user's two-factor or the merchant's
requirement, or remove a user: with any of these it could go on to confirm withdrawals with no
code. Nor may it point the API connection (and so its tokens) elsewhere, or the checkout page's
shop link. So these changes ask for a code as a withdrawal does (not a recovery code).
"""

from __future__ import annotations

from flask import abort, current_app, flash, redirect, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import Rates
from portal.database import utcnow
from portal.identity.models import Role, User
from portal.identity.rules import accounts, audit, one_time_links, passkeys, two_factor
from portal.live.rules import outbox
from portal.money.rules import controls, refunds
from portal.money.rules.reporting import (
    LimitsNotConvertible,
    Revalued,
    change_reporting_currency,
    choosable,
)
from portal.payments.rules.mirror_money import set_tolerance
from portal.payments.rules.shops import save_settings
from portal.settings.models import Environment
from portal.settings.pages import bp
from portal.settings.pages.connection_messages import TOKEN_NEEDS, rejection_sentence
from portal.settings.pages.forms import (
    ApiSettingsForm,
    CheckoutSettingsForm,
    EditUserForm,
    InviteForm,
    NewUserForm,
    RefundLinkForm,
    RemoveUserForm,
    ReportingCurrencyForm,
    RequireTwoFactorForm,
    ToleranceForm,
)
from portal.settings.rules.connection import (
    ConnectionRejected,
    Credentials,
    TokensNeeded,
    connect,
    credentials_to_check,
    masked_tokens,
)
from portal.web.access import roles
from portal.web.api_errors import unless_unavailable
from portal.web.controls import waits_words
from portal.web.merchant import current_api
from portal.web.rendering import page
from portal.web.step_up import audit_refused, code_refused, form_refused, step_up_refused
from portal.web.users import refusal_sentence


def _owner() -> User:
    """The signed-in owner itself (the checks of a code change and refresh it)."""
    return current_user._get_current_object()


@bp.get("")
@roles(Role.OWNER)
def index() -> Response:
    """The menu's Settings opens its first page, the API connection."""
    return redirect(url_for("settings.api"))


@bp.route("/api", methods=["GET", "POST"])
@roles(Role.OWNER)
def api() -> Response:
    """Check the credentials against the API, then store them encrypted.

    Nothing is sent before the tokens a new base URL or environment needs are typed and the
    owner's fresh code (with two-factor on) is accepted.
    """
    merchant = current_user.merchant
    form = ApiSettingsForm(obj=merchant.api_connection)
    if not form.validate_on_submit():
        return _api_page(form, 422 if form.is_submitted() else 200)
    typed = Credentials(
        form.base_url.data,
        Environment(form.environment.data),
        form.token.data or "",
        form.company_token.data or None,
    )
    changes = {
        "base_url": typed.base_url,
        "environment": typed.environment.value,
        "token": typed.token or None,
        "company_token": typed.company_token,
        "remove_company_token": "yes" if form.remove_company_token.data else None,
    }
    try:
        credentials = credentials_to_check(
            merchant.api_connection, typed, remove_company_token=form.remove_company_token.data
        )
    except TokensNeeded as needed:
        problems = {name: TOKEN_NEEDS[need] for name, need in needed.needs.items()}
        for name, problem in problems.items():
            form[name].errors.append(problem)
        audit.record("api_settings.change", parameters=changes, error=" ".join(problems.values()))
        return _api_page(form, 422)
    refused = step_up_refused(form.code, _owner(), purpose="api_settings")
    if refused:
        return _api_page(form, refused)
    try:
        connect(merchant, credentials)
    except ConnectionRejected as rejection:
        error = rejection_sentence(rejection)
        audit.record("api_settings.change", parameters=changes, error=error)
        return _api_page(form, 422, error=error)
    audit.record("api_settings.change", parameters=changes)
    current_app.logger.info(
        "API connection of merchant %s saved by user %s (%s, %s)",
        merchant.id,
        current_user.id,
        credentials.environment,
        credentials.base_url,
    )
    flash("The payment service accepted the credentials. They are saved.", "success")
    return redirect(url_for("settings.api"))


def _api_page(form: ApiSettingsForm, status: int, error: str | None = None) -> Response:
    connection = current_user.merchant.api_connection
    token_mask, company_mask = masked_tokens(connection) if connection else (None, None)
    return page(
        "settings/api.html",
        status,
        form=form,
        connection=connection,
        token_mask=token_mask,
        company_mask=company_mask,
        error=error,
    )


@bp.route("/checkout", methods=["GET", "POST"])
@roles(Role.OWNER)
def checkout() -> Response:
    """The merchant's name on the public checkout page, the shop it links back to, and the
    address customers may write to.

    Customers trust that link: an owner with two-factor on confirms a change with a code.
    """
    merchant = current_user.merchant
    form = CheckoutSettingsForm(obj=merchant)
    status = form_refused(form, _owner(), purpose="checkout_settings")
    changes = {
        "display_name": form.display_name.data or None,
        "shop_url": form.shop_url.data or None,
        "support_email": form.support_email.data or None,
    }
    if status:
        audit_refused("checkout_settings.change", form, status, changes)
        return _checkout_page(status, form=form)
    save_settings(merchant, form.display_name.data, form.shop_url.data, form.support_email.data)
    audit.record("checkout_settings.change", parameters=changes)
    flash("The checkout page settings are saved.", "success")
    return redirect(url_for("settings.checkout"))


@bp.post("/checkout/tolerance")
@roles(Role.OWNER)
def payment_tolerance() -> Response:
    """The merchant's payment tolerance; the mirror's operations are read again with it, and the
    page says how many changed state.

    A tolerance makes an underpayment read as paid: an owner with two-factor on confirms it with
    a code, so a stolen session cannot quietly ship goods for less."""
    form = ToleranceForm()
    status = form_refused(form, _owner(), purpose="payment_tolerance")
    if status:
        typed = {"percent": " ".join(form.payment_tolerance_percent.raw_data or [])}
        audit_refused("payment_tolerance.change", form, status, typed)
        return _checkout_page(status, tolerance_form=form)
    percent = form.payment_tolerance_percent.data
    assert percent is not None  # the form checked it
    changed = set_tolerance(current_user.merchant, percent)
    audit.record("payment_tolerance.change", parameters={"percent": str(percent)})
    operations = "operation" if changed == 1 else "operations"
    flash(
        f"The payment tolerance is now {percent}%. {changed} {operations} changed state.", "success"
    )
    return redirect(url_for("settings.checkout"))


@bp.post("/checkout/refund-link")
@roles(Role.OWNER)
def refund_link() -> Response:
    """How long a refund's claim link waits for the customer's address (owners; a fresh code
    for an owner with two-factor on, as for the tolerance)."""
    form = RefundLinkForm()
    status = form_refused(form, _owner(), purpose="refund_link_days")
    if status:
        return _checkout_page(status, refund_link_form=form)
    days = form.refund_link_days.data
    assert days is not None  # the form checked it
    refunds.set_link_days(current_user.merchant, days)
    flash(f"New refund links expire after {days} days.", "success")
    return redirect(url_for("settings.checkout"))


@bp.post("/reporting-currency")
@roles(Role.OWNER)
def reporting_currency() -> Response:
    """The currency the ledger's values are given in, among those the payment service quotes
    against every wallet currency now; the ledger is valued again, and the page says how many
    movements found no rate.

    Beside the payment tolerance: both decide how the portal counts the money customers pay."""
    rates = _rates_now()
    form = _reporting_form(rates)
    if rates is None:  # nothing to choose from: the page says why, and nothing changes
        not_connected = current_user.merchant.api_connection is None
        return _checkout_page(409 if not_connected else 502, reporting_form=form)
    status = form_refused(form, _owner(), purpose="reporting_currency")
    if status:
        typed = {"new": form.reporting_currency.data}
        audit_refused("reporting_currency.change", form, status, typed)
        return _checkout_page(status, reporting_form=form)
    try:
        revalued = change_reporting_currency(
            current_user.merchant, form.reporting_currency.data, _owner(), rates
        )
    except LimitsNotConvertible as refused:
        form.reporting_currency.errors = [str(refused)]
        return _checkout_page(422, reporting_form=form)
    flash(_revalued_sentence(revalued), "success")
    return redirect(url_for("settings.checkout"))


def _rates_now() -> Rates | None:
    """The payment service's rates now; None when the merchant is not connected or the service
    does not answer."""
    if current_user.merchant.api_connection is None:
        return None
    return unless_unavailable(current_api().get_rates)


def _reporting_form(rates: Rates | None, **blank: object) -> ReportingCurrencyForm:
    form = ReportingCurrencyForm(
        reporting_currency=current_user.merchant.reporting_currency, **blank
    )
    form.offer(choosable(rates) if rates is not None else [])
    return form


def _revalued_sentence(revalued: Revalued) -> str:
    movements = "movement" if revalued.valued == 1 else "movements"
    sentence = (
        f"Figures are now in {revalued.currency}: {revalued.valued:,} {movements} valued again "
        "at the rates recorded at their time"
    )
    if revalued.without_rate:
        have = "has" if revalued.without_rate == 1 else "have"
        sentence += f"; {revalued.without_rate:,} {have} no rate"
    if revalued.limits_converted:
        sentence += (
            f". Your withdrawal limits were converted to {revalued.currency} at today's rates, "
            "rounded down"
        )
    return sentence + "."


def _checkout_page(status: int, **forms: object) -> Response:
    """The checkout settings page with its three forms (a blank one unless given); the
    reporting currency's choices are read from the payment service."""
    merchant = current_user.merchant
    forms.setdefault("form", CheckoutSettingsForm(obj=merchant))
    forms.setdefault("tolerance_form", ToleranceForm(obj=merchant))
    forms.setdefault("refund_link_form", RefundLinkForm(obj=merchant))
    if "reporting_form" not in forms:
        forms["reporting_form"] = _reporting_form(_rates_now(), formdata=None)
    return page("settings/checkout.html", status, merchant=merchant, **forms)


@bp.route("/users", methods=["GET", "POST"])
@roles(Role.OWNER)
def users() -> Response:
    """The merchant's users, and a form to add one."""
    form = NewUserForm()
    status = form_refused(form, _owner(), purpose="users")
    if status:
        return _users_page(status, form=form)
    role = Role(form.role.data)
    try:
        user = accounts.add_user(
            current_user.merchant,
            form.email.data,
            _role_now(role),
            form.password.data,
            chosen_by_other=True,
            by=_owner(),
        )
    except accounts.AccountError as refusal:
        error = refusal_sentence(refusal, current_user.merchant)
        form.email.errors.append(error)
        audit.record("user.add", parameters={"email": form.email.data}, error=error)
        return _users_page(422, form=form)
    audit.record("user.add", parameters={"email": user.email, "role": user.role.value})
    flash(f"{user.email} can now sign in as {user.role.label.lower()}.", "success")
    _role_asked(user, role)
    return redirect(url_for("settings.users"))


def _role_now(role: Role) -> Role:
    """The role a new user gets at once: an owner is an accountant (who reads, and moves no
    money) until another owner approves, or the delay passed (`controls.make_owner`)."""
    return Role.ACCOUNTANT if role is Role.OWNER else role


def _role_asked(user: User, role: Role) -> None:
    """Ask for `user` to become an owner, or another owner to stop being one, when the role
    chosen says so, saying how it goes on."""
    if role is Role.OWNER and user.role is not Role.OWNER:
        change = controls.make_owner(user, _owner())
        flash(waits_words(change, f"{user.email} becomes an owner"), "info")
    elif role is not Role.OWNER and user.role is Role.OWNER and user.id != current_user.id:
        change = controls.demote_owner(user, _owner())
        flash(waits_words(change, f"{user.email} becomes an accountant"), "info")


@bp.route("/users/invite", methods=["POST"])
@roles(Role.OWNER)
def invite_user() -> Response:
    """Add a user who sets their own password from a mailed one-time link (e-mail on only)."""
    form = InviteForm(prefix="invite")
    status = 422 if not outbox.enabled() else form_refused(form, _owner(), purpose="users")
    if status:
        return _users_page(status, invite_form=form)
    role = Role(form.role.data)
    try:
        user = one_time_links.invite(
            current_user.merchant, form.email.data, _role_now(role), by=_owner()
        )
    except accounts.AccountError as refusal:
        error = refusal_sentence(refusal, current_user.merchant)
        form.email.errors.append(error)
        audit.record("user.add", parameters={"email": form.email.data}, error=error)
        return _users_page(422, invite_form=form)
    parameters = {"email": user.email, "role": user.role.value, "invited": "yes"}
    audit.record("user.add", parameters=parameters)
    flash(f"An invitation is on its way to {user.email}; the link works for 7 days.", "success")
    _role_asked(user, role)
    return redirect(url_for("settings.users"))


@bp.post("/users/<int:user_id>/invite-again")
@roles(Role.OWNER)
def invite_again(user_id: int) -> Response:
    """Mail an invited user a new link; the one mailed before stops working."""
    user = _merchant_user(user_id)
    if not outbox.enabled():
        abort(409)
    try:
        one_time_links.invite_again(user, by=_owner())
    except one_time_links.LinkRefused:
        return _not_invited("user.invite_again", user)
    audit.record("user.invite_again", parameters={"email": user.email})
    flash(
        f"A new invitation is on its way to {user.email}; the one before no longer works.",
        "success",
    )
    return redirect(url_for("settings.users"))


@bp.post("/users/<int:user_id>/revoke-invitation")
@roles(Role.OWNER)
def revoke_invitation(user_id: int) -> Response:
    """Take an invitation back: its link stops working and the invited user is removed."""
    user = _merchant_user(user_id)
    email = user.email
    try:
        one_time_links.revoke_invitation(user, by=_owner())
    except one_time_links.LinkRefused:
        return _not_invited("user.revoke_invitation", user)
    except accounts.AccountError as refusal:  # invited as an owner, and an owner since
        error = refusal_sentence(refusal, current_user.merchant)
        audit.record("user.revoke_invitation", parameters={"email": email}, error=error)
        flash(error, "error")
        return redirect(url_for("settings.users"), 303)
    audit.record("user.revoke_invitation", parameters={"email": email})
    flash(f"The invitation of {email} is revoked: its link no longer works.", "success")
    return redirect(url_for("settings.users"))


def _not_invited(action: str, user: User) -> Response:
    """Back to the users, which say why nothing changed: the user chose a password meanwhile
    (or was added with one)."""
    error = f"{user.email} is no longer invited: they chose a password."
    audit.record(action, parameters={"email": user.email}, error=error)
    flash(error, "error")
    return redirect(url_for("settings.users"), 303)


@bp.route("/users/two-factor", methods=["POST"])
@roles(Role.OWNER)
def require_two_factor() -> Response:
    """Require two-factor sign-in of every user (only an owner who has it on may turn it on),
    and a passkey for approvals. Each change asks that owner for a fresh second factor and is
    audited; while a passkey is required for approvals, no longer requiring it takes a
    passkey's answer (`_passkey_refused`)."""
    merchant = current_user.merchant
    form = RequireTwoFactorForm()
    if not form.validate_on_submit():
        return _users_page(422, requirement_form=form)
    required = form.required.data
    if required and not current_user.has_second_factor:
        refusal = "Turn on two-factor sign-in for yourself first, under Account."
        form.required.errors.append(refusal)
        audit.record("two_factor.requirement_on", error=refusal)
        return _users_page(422, requirement_form=form)
    passkey = form.passkey_for_approvals.data
    if merchant.require_passkey_for_approvals and not passkey:
        refused = _passkey_refused(form, _owner())
    else:
        refused = step_up_refused(form.requirement_code, _owner(), purpose="users")
    if refused:
        return _users_page(refused, requirement_form=form)
    if accounts.require_two_factor(merchant, required):
        audit.record(f"two_factor.requirement_{'on' if required else 'off'}")
    if accounts.require_passkey_for_approvals(merchant, passkey):
        audit.record(f"passkey.approvals_{'on' if passkey else 'off'}")
    if required:
        flash("Every user must now sign in with two-factor sign-in.", "success")
    else:
        flash("Two-factor sign-in is no longer required.", "success")
    return redirect(url_for("settings.users"))


PASSKEY_TO_STOP = (
    "The owners require a passkey for approvals: to stop requiring it, confirm with your "
    "passkey. A code will not do."
)
NO_PASSKEY_TO_STOP = (
    "The owners require a passkey for approvals: only an owner with a passkey may stop "
    "requiring it. Add a passkey under Account first."
)


def _passkey_refused(form: RequireTwoFactorForm, owner: User) -> int | None:
    """No longer requiring a passkey for approvals takes the owner's passkey's answer, never a
    code: a phishing page can relay a code, and with it would switch the requirement off, then
    approve with another. None when confirmed; else the status, the reason next to the field,
    and the refusal in the audit log."""
    if owner.passkeys:
        status = code_refused(form.requirement_code, owner, purpose="users", passkey_only=True)
        if status is None:
            return None
        reason = PASSKEY_TO_STOP
    else:
        status, reason = 422, NO_PASSKEY_TO_STOP
    field = form.passkey_for_approvals
    field.errors = [*field.errors, reason]
    audit_refused("passkey.approvals_off", form, status)
    return status


def _users_page(
    status: int,
    *,
    form: NewUserForm | None = None,
    invite_form: InviteForm | None = None,
    requirement_form: RequireTwoFactorForm | None = None,
) -> Response:
    merchant = current_user.merchant
    users = accounts.users_of(merchant)
    return page(
        "settings/users.html",
        status,
        form=form or NewUserForm(formdata=None),
        invite_form=invite_form or InviteForm(prefix="invite", formdata=None),
        mail_on=outbox.enabled(),
        requirement_form=requirement_form
        or RequireTwoFactorForm(
            formdata=None,
            required=merchant.require_two_factor,
            passkey_for_approvals=merchant.require_passkey_for_approvals,
        ),
        users=users,
        pending=controls.waiting(merchant),
        invited=one_time_links.invitation_expiries(user.id for user in users),
        now=utcnow(),
    )


def _merchant_user(user_id: int) -> User:
    """A user of the current merchant; 404 for anyone else's, as if it did not exist."""
    user = accounts.user_of(current_user.merchant_id, user_id)
    if user is None:
        abort(404)
    return user


@bp.route("/users/<int:user_id>", methods=["GET", "POST"])
@roles(Role.OWNER)
def edit_user(user_id: int) -> Response:
    """Change a user's role, or set a new password."""
    user = _merchant_user(user_id)
    form = EditUserForm(role=user.role.value)
    status = form_refused(form, _owner(), purpose="users")
    if status:
        return page("settings/edit_user.html", status, form=form, user=user)
    role = Role(form.role.data)
    # For a lost phone: they sign in with the password alone, and set it up again. Owners turn
    # their own off at /account/two-factor, with a code.
    reset = (
        bool(form.turn_off_two_factor.data)
        and user.id != current_user.id
        and user.has_second_factor
    )
    # A role to or from owner (another's) waits as a control: `_role_asked` below.
    waits = role is Role.OWNER or (user.role is Role.OWNER and user.id != current_user.id)
    try:
        accounts.change_user(
            user,
            by=current_user,
            role=user.role if waits else role,
            password=form.password.data,
            turn_off_two_factor=reset,
        )
    except accounts.AccountError as refusal:
        error = _edit_refusal(form, refusal)
        audit.record("user.change", parameters={"email": user.email}, error=error)
        return page("settings/edit_user.html", 422, form=form, user=user)
    changes = {"email": user.email, "role": form.role.data, "password": form.password.data}
    audit.record("user.change", parameters=changes)
    if reset:
        passkeys.forget_all(user, by=current_user)
        two_factor.disable(user, by=current_user)
        accounts.revoke_sessions(user)
    flash(f"The changes to {user.email} are saved.", "success")
    _role_asked(user, role)
    return redirect(url_for("settings.users"))


def _edit_refusal(form: EditUserForm, refusal: accounts.AccountError) -> str:
    """Say why `edit_user` changed nothing, beside the field that asked for what is refused."""
    error = refusal_sentence(refusal, current_user.merchant)
    field = form.role
    if refusal.reason is accounts.Refusal.OWN_SIGN_IN or (
        refusal.reason is accounts.Refusal.OTHER_OWNER_SIGN_IN and form.password.data
    ):
        field = form.password
    elif refusal.reason is accounts.Refusal.OTHER_OWNER_SIGN_IN:
        field = form.turn_off_two_factor
    field.errors.append(error)
    return error


@bp.route("/users/<int:user_id>/remove", methods=["GET", "POST"])
@roles(Role.OWNER)
def remove_user(user_id: int) -> Response:
    """Ask for confirmation on its own page, then remove the user."""
    user = _merchant_user(user_id)
    form = RemoveUserForm()
    status = form_refused(form, _owner(), purpose="users")
    if status:
        return page("settings/remove_user.html", status, form=form, user=user)
    email = user.email
    try:
        accounts.remove_user(user, by=current_user)
    except accounts.AccountError as refusal:
        error = refusal_sentence(refusal, current_user.merchant)
        audit.record("user.remove", parameters={"email": email}, error=error)
        return page("settings/remove_user.html", 422, form=form, user=user, error=error)
    audit.record("user.remove", parameters={"email": email})
    flash(f"{email} was removed and can no longer sign in.", "success")
    return redirect(url_for("settings.users"))

"""Owners connect the API and manage the merchant's users; every query stays in their merchant.

An owner with two-factor sign-in on confirms every change here with a fresh code.
"""

from __future__ import annotations

import sqlalchemy as sa
from flask import abort, current_app, flash, redirect, render_template, url_for
from flask_login import current_user
from flask_wtf import FlaskForm

from portal.extensions import db
from portal.models import Environment, Role, User
from portal.rules import accounts, audit, two_factor
from portal.rules.connection import (
    ConnectionRejected,
    Credentials,
    TokensNeeded,
    connect,
    credentials_to_check,
    masked_tokens,
)
from portal.rules.shops import save_settings
from portal.settings import bp
from portal.settings.forms import (
    ApiSettingsForm,
    CheckoutSettingsForm,
    EditUserForm,
    NewUserForm,
    RemoveUserForm,
    RequireTwoFactorForm,
)
from portal.web.access import roles
from portal.web.fields import CodeField
from portal.web.pages import PageAnswer


@bp.route("/api", methods=["GET", "POST"])
@roles(Role.OWNER)
def api() -> PageAnswer:
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
        for name, problem in needed.problems.items():
            form[name].errors.append(problem)
        audit.record("api_settings.change", parameters=changes, error=str(needed))
        return _api_page(form, 422)
    refused = _step_up_refused(form.code, purpose="api_settings")
    if refused:
        return _api_page(form, refused)
    try:
        connect(merchant, credentials)
    except ConnectionRejected as rejection:
        audit.record("api_settings.change", parameters=changes, error=str(rejection))
        return _api_page(form, 422, error=str(rejection))
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


def _api_page(form: ApiSettingsForm, status: int, error: str | None = None) -> PageAnswer:
    connection = current_user.merchant.api_connection
    token_mask, company_mask = masked_tokens(connection) if connection else (None, None)
    page = render_template(
        "settings/api.html",
        form=form,
        connection=connection,
        token_mask=token_mask,
        company_mask=company_mask,
        error=error,
    )
    return page, status


@bp.route("/checkout", methods=["GET", "POST"])
@roles(Role.OWNER)
def checkout() -> PageAnswer:
    """The merchant's name on the public checkout page, and the shop it links back to.

    Customers trust that link: an owner with two-factor on confirms a change with a code.
    """
    merchant = current_user.merchant
    form = CheckoutSettingsForm(obj=merchant)
    unconfirmed = _unless_confirmed(
        form, "settings/checkout.html", purpose="checkout_settings", merchant=merchant
    )
    if unconfirmed:
        return unconfirmed
    save_settings(merchant, form.display_name.data, form.shop_url.data)
    flash("The checkout page settings are saved.", "success")
    return redirect(url_for("settings.checkout"))


def _step_up_refused(field: CodeField, *, purpose: str) -> int | None:
    """Ask an owner who has two-factor on for a fresh code (in `field`) before a change under
    settings; `purpose` names it in the audit log.

    A stolen session cookie alone must not add an owner with a password of the thief's, change a
    role or a password, turn off a user's two-factor or the merchant's requirement, or remove a
    user: with any of these it could go on to confirm withdrawals with no code. Nor may it point
    the API connection (and so its tokens) elsewhere, or the checkout page's shop link. So these
    changes ask for a code as a withdrawal does (not a recovery code).
    """
    owner = current_user._get_current_object()
    return two_factor.step_up_refused(field, owner, purpose=purpose)


def _unless_confirmed(
    form: FlaskForm, template: str, *, purpose: str, **context: object
) -> PageAnswer | None:
    """The form's page (again) until it is valid and its `code` accepted; None to go on."""
    if not form.validate_on_submit():
        page = render_template(template, form=form, **context)
        return (page, 422) if form.is_submitted() else page
    refused = _step_up_refused(form.code, purpose=purpose)
    if refused:
        return render_template(template, form=form, **context), refused
    return None


@bp.route("/users", methods=["GET", "POST"])
@roles(Role.OWNER)
def users() -> PageAnswer:
    """The merchant's users, and a form to add one."""
    form = NewUserForm()
    if not form.validate_on_submit():
        return _users_page(422 if form.is_submitted() else 200, form=form)
    refused = _step_up_refused(form.code, purpose="users")
    if refused:
        return _users_page(refused, form=form)
    try:
        user = accounts.add_user(
            current_user.merchant, form.email.data, Role(form.role.data), form.password.data
        )
    except accounts.AccountError as refusal:
        form.email.errors.append(str(refusal))
        audit.record("user.add", parameters={"email": form.email.data}, error=str(refusal))
        return _users_page(422, form=form)
    audit.record("user.add", parameters={"email": user.email, "role": user.role.value})
    flash(f"{user.email} can now sign in as {user.role.label.lower()}.", "success")
    return redirect(url_for("settings.users"))


@bp.route("/users/two-factor", methods=["POST"])
@roles(Role.OWNER)
def require_two_factor() -> PageAnswer:
    """Require two-factor sign-in of every user; only an owner who has it on may turn it on.

    Turning it on or off asks that owner for a fresh code (`_step_up_refused`).
    """
    merchant = current_user.merchant
    form = RequireTwoFactorForm()
    if not form.validate_on_submit():
        return _users_page(422, requirement_form=form)
    required = form.required.data
    if required and not current_user.two_factor_enabled:
        refusal = "Turn on two-factor sign-in for yourself first, under Account."
        form.required.errors.append(refusal)
        audit.record("two_factor.requirement_on", error=refusal)
        return _users_page(422, requirement_form=form)
    refused = _step_up_refused(form.requirement_code, purpose="users")
    if refused:
        return _users_page(refused, requirement_form=form)
    if required != merchant.require_two_factor:
        merchant.require_two_factor = required
        db.session.commit()
        audit.record(f"two_factor.requirement_{'on' if required else 'off'}")
    if required:
        flash("Every user must now sign in with two-factor sign-in.", "success")
    else:
        flash("Two-factor sign-in is no longer required.", "success")
    return redirect(url_for("settings.users"))


def _users_page(
    status: int,
    *,
    form: NewUserForm | None = None,
    requirement_form: RequireTwoFactorForm | None = None,
) -> PageAnswer:
    merchant = current_user.merchant
    page = render_template(
        "settings/users.html",
        form=form or NewUserForm(formdata=None),
        requirement_form=requirement_form
        or RequireTwoFactorForm(formdata=None, required=merchant.require_two_factor),
        users=merchant.users,
    )
    return page, status


def _merchant_user(user_id: int) -> User:
    """A user of the current merchant; 404 for anyone else's, as if it did not exist."""
    user = db.session.scalar(
        sa.select(User).where(User.id == user_id, User.merchant_id == current_user.merchant_id)
    )
    if user is None:
        abort(404)
    return user


@bp.route("/users/<int:user_id>", methods=["GET", "POST"])
@roles(Role.OWNER)
def edit_user(user_id: int) -> PageAnswer:
    """Change a user's role, or set a new password."""
    user = _merchant_user(user_id)
    form = EditUserForm(role=user.role.value)
    unconfirmed = _unless_confirmed(form, "settings/edit_user.html", purpose="users", user=user)
    if unconfirmed:
        return unconfirmed
    try:
        accounts.change_user(
            user, by=current_user, role=Role(form.role.data), password=form.password.data
        )
    except accounts.AccountError as refusal:
        form[refusal.field or "role"].errors.append(str(refusal))
        audit.record("user.change", parameters={"email": user.email}, error=str(refusal))
        return render_template("settings/edit_user.html", form=form, user=user), 422
    changes = {"email": user.email, "role": form.role.data, "password": form.password.data}
    audit.record("user.change", parameters=changes)
    # For a lost phone: they sign in with the password alone, and set it up again. Owners turn
    # their own off at /account/two-factor, with a code.
    reset = form.turn_off_two_factor.data and user.id != current_user.id
    if reset and user.two_factor_enabled:
        two_factor.disable(user, by=current_user)
        accounts.revoke_sessions(user)
        db.session.commit()
    flash(f"The changes to {user.email} are saved.", "success")
    return redirect(url_for("settings.users"))


@bp.route("/users/<int:user_id>/remove", methods=["GET", "POST"])
@roles(Role.OWNER)
def remove_user(user_id: int) -> PageAnswer:
    """Ask for confirmation on its own page, then remove the user."""
    user = _merchant_user(user_id)
    form = RemoveUserForm()
    unconfirmed = _unless_confirmed(form, "settings/remove_user.html", purpose="users", user=user)
    if unconfirmed:
        return unconfirmed
    email = user.email
    try:
        accounts.remove_user(user, by=current_user)
    except accounts.AccountError as refusal:
        error = str(refusal)
        audit.record("user.remove", parameters={"email": email}, error=error)
        page = render_template("settings/remove_user.html", form=form, user=user, error=error)
        return page, 422
    audit.record("user.remove", parameters={"email": email})
    flash(f"{email} was removed and can no longer sign in.", "success")
    return redirect(url_for("settings.users"))

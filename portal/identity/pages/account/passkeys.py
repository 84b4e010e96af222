"""`/account/passkeys`: one's own passkeys: add (the password, then the browser makes the key for
a registration challenge), see when each was last used, remove (the password again). A user who
has a second factor already gives it too, as for every change to two-factor: a stolen session
and password must not add the thief's passkey, which every step-up accepts. Also the challenge
a step-up's passkey answers (`passkey_challenge`), for any signed-in user."""

from __future__ import annotations

from flask import abort, flash, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.identity.models import User
from portal.identity.pages.account import bp
from portal.identity.pages.account.forms import AddPasskeyForm, RemovePasskeyForm
from portal.identity.rules import passkeys
from portal.web.access import ALL_ROLES, open_before_enrolment, roles
from portal.web.rendering import page
from portal.web.sessions import end_other_sessions
from portal.web.step_up import form_refused, json_answer, put_refusal


@bp.get("/account/passkeys")
@roles(*ALL_ROLES)
@open_before_enrolment
def passkeys_page() -> Response:
    return _passkeys_page(200)


@bp.post("/account/passkeys/options")
@roles(*ALL_ROLES)
@open_before_enrolment
def passkey_options() -> Response:
    """The options of a new passkey, with a registration challenge: JSON for the script."""
    if passkeys.relying_party() is None:
        abort(404)
    return json_answer(passkeys.registration_options(current_user._get_current_object()))


@bp.post("/account/passkeys")
@roles(*ALL_ROLES)
@open_before_enrolment
def add_passkey() -> Response:
    """Store the passkey the browser made, after the current password and the second factor the
    user has (`form_refused`); a user with no other way back in gets recovery codes, shown this
    once. Every other session of the user ends. Where the owners require a passkey for
    approvals, a user who has one confirms with it: a relayed code would add the phisher's
    passkey, which then approves."""
    user = current_user._get_current_object()
    form = AddPasskeyForm(prefix="add")
    status = (
        422
        if passkeys.relying_party() is None
        else form_refused(
            form,
            user,
            purpose="passkey",
            password_field=form.password,
            passkey_only=_approves(user),
        )
    )
    if status:
        return _passkeys_page(status, add_form=form)
    try:
        codes = passkeys.register(user, form.credential.data, form.name.data)
    except passkeys.PasskeyRefused as refusal:
        return _passkeys_page(put_refusal(form.name, refusal), add_form=form)
    end_other_sessions(user)
    message = f"The passkey {form.name.data} is added."
    if codes:
        back = url_for("account.passkeys_page")
        return page("account/recovery_codes.html", codes=codes, message=message, back_url=back)
    flash(message, "success")
    return redirect(url_for("account.passkeys_page"))


@bp.post("/account/passkeys/<int:passkey_id>/remove")
@roles(*ALL_ROLES)
def remove_passkey(passkey_id: int) -> Response:
    """Remove a passkey after the current password and a fresh second factor; never the last
    second factor while the merchant requires two-factor sign-in. Without a second factor left,
    the user's other sessions end, as when two-factor is turned off."""
    user = current_user._get_current_object()
    form = RemovePasskeyForm(prefix=f"remove-{passkey_id}")
    status = form_refused(
        form,
        user,
        purpose="passkey",
        password_field=form.password,
        passkey_only=_approves(user),
    )
    if status is None:
        try:
            passkeys.remove(user, passkey_id)
        except passkeys.PasskeyRefused as refusal:
            if refusal.reason is passkeys.Reason.UNKNOWN:
                abort(404)
            status = put_refusal(form.password, refusal)
    if status:
        return _passkeys_page(status, remove_forms={passkey_id: form})
    if not user.has_second_factor:
        end_other_sessions(user)
    flash("The passkey is removed.", "success")
    return redirect(url_for("account.passkeys_page"))


@bp.post("/account/passkeys/challenge")
@roles(*ALL_ROLES)
def passkey_challenge() -> Response:
    """The options of a step-up's passkey, with a challenge for the one change named by
    `action` (the form's path and idempotency key): JSON for the script."""
    user = current_user._get_current_object()
    action = request.form.get("action", "")
    if not user.passkeys or not action.startswith("/") or passkeys.relying_party() is None:
        abort(404)
    return json_answer(passkeys.assertion_options(user, action))


def _passkeys_page(
    status: int,
    *,
    add_form: AddPasskeyForm | None = None,
    remove_forms: dict[int, RemovePasskeyForm] | None = None,
) -> Response:
    """The user's passkeys, each with its remove form, and the form that adds one."""
    shown = remove_forms or {}
    forms = {
        key.id: shown.get(key.id) or RemovePasskeyForm(prefix=f"remove-{key.id}", formdata=None)
        for key in current_user.passkeys
    }
    return page(
        "account/passkeys.html",
        status,
        add_form=add_form or AddPasskeyForm(prefix="add", formdata=None),
        remove_forms=forms,
        off=passkeys.off_reason(),
    )


def _approves(user: User) -> bool:
    """Whether the user's passkeys are what approves money here (the owners require one for
    approvals): then adding or removing one takes a passkey's answer, never a code a phishing
    page could relay (removing the last passkey would switch the rule off for the next)."""
    return user.merchant.require_passkey_for_approvals and bool(user.passkeys)

"""/settings/notifications: the webhooks an owner's shop receives (see docs/webhooks.md).

The URL, the event types, the signing secret and its rotation, a test event, and the delivery
log with Resend. Changing the URL or rotating the secret asks an owner with two-factor on for a
fresh code, as the other settings do: a stolen session must not send the merchant's payments to
another address, nor learn a secret the shop will trust. So the secret is shown masked, and
revealed (audited) only after a fresh code, or the password for an owner without two-factor,
as a voucher's code. Test events and resends are queued for the worker (limited per endpoint):
the owner's request never waits for the shop. Refused changes are audited with their reasons.
"""

from __future__ import annotations

from flask import abort, flash, redirect, url_for
from flask_login import current_user
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response
from wtforms import PasswordField, SelectChoice, SelectMultipleField, SubmitField, URLField
from wtforms.validators import Length, Optional, ValidationError
from wtforms.widgets import CheckboxInput, ListWidget

from portal.identity.models import Role, User
from portal.identity.rules import audit
from portal.live.models import WebhookDelivery, WebhookEndpoint
from portal.live.rules import outbox, webhooks
from portal.settings.pages import bp
from portal.settings.pages.forms import STEP_UP_LABEL
from portal.web.access import roles
from portal.web.fields import CodeField, strip
from portal.web.formatting import user_zone_name
from portal.web.lists import local_page
from portal.web.rendering import page, polled_by, render_page
from portal.web.step_up import audit_refused, form_refused

URL_PROBLEMS = {
    webhooks.UrlProblem.NOT_WEB: "Enter an address starting with http:// or https://, such as "
    "https://shop.example.com/webhooks.",
    webhooks.UrlProblem.USER: "Enter the address without a user name or password.",
    webhooks.UrlProblem.UNKNOWN_HOST: "That host cannot be found. Check the address.",
    webhooks.UrlProblem.PRIVATE: "That address is private or local: the portal sends webhooks "
    "only to addresses on the internet.",
}
PER_PAGE = 25
PAGE, LOG_FRAGMENT = "settings/notifications.html", "settings/_delivery_log.html"
SECRET_FRAGMENT = "settings/_secret.html"  # noqa: S105 (a template, not a secret)
# The delivery log's element, which asks for the log again while something waits to be sent.
LOG_POLLER = "delivery-log"
TOO_MANY = (
    "Too many test events and resends to this endpoint. Wait a minute, then try again: "
    "nothing was queued."
)


def _webhook_url(_form: FlaskForm, field: URLField) -> None:
    problem = webhooks.url_problem(field.data) if field.data else None
    if problem:
        raise ValidationError(URL_PROBLEMS[problem])


class WebhookForm(FlaskForm):
    url = URLField(
        "Webhook URL",
        validators=[Optional(), Length(max=2048), _webhook_url],
        filters=[strip],
    )
    event_types = SelectMultipleField(
        "Events to send",
        choices=[SelectChoice(type_.value, type_.value) for type_ in webhooks.TYPES],
        widget=ListWidget(prefix_label=False),
        option_widget=CheckboxInput(),
    )
    code = CodeField(STEP_UP_LABEL)
    submit = SubmitField("Save webhook settings")


class RotateForm(FlaskForm):
    code = CodeField(STEP_UP_LABEL)
    submit = SubmitField("Rotate secret")


class RevealSecretForm(FlaskForm):
    """Whoever reads the secret can sign webhooks the shop trusts: a fresh code first with
    two-factor on, else the current password (counted as a sign-in attempt)."""

    password = PasswordField("Your password")
    code = CodeField(STEP_UP_LABEL)
    submit = SubmitField("Reveal secret")


def _webhook_form(endpoint: WebhookEndpoint | None, **options: object) -> WebhookForm:
    """The form with the saved URL and types (the default types before the first save)."""
    return WebhookForm(
        url=endpoint.url if endpoint else "",
        event_types=endpoint.event_types if endpoint else [t.value for t in webhooks.DEFAULT_TYPES],
        **options,
    )


def _owner() -> User:
    return current_user._get_current_object()


@bp.route("/notifications", methods=["GET", "POST"])
@roles(Role.OWNER)
def notifications() -> Response:
    """The webhook settings and the delivery log; a POST saves the URL and the types. The log
    asks for itself (the fragment alone) while a test event or a resend waits for the worker."""
    merchant = current_user.merchant
    form = _webhook_form(webhooks.endpoint_of(merchant))
    status = form_refused(form, _owner(), purpose="webhooks")
    changes = {"url": form.url.data or None, "event_types": ", ".join(form.event_types.data or [])}
    if status:
        audit_refused("webhooks.change", form, status, changes)
        fragment = LOG_FRAGMENT if polled_by(LOG_POLLER) else PAGE
        return _page(status, form=form, fragment=fragment)
    webhooks.save_endpoint(merchant, form.url.data or "", form.event_types.data or [])
    audit.record("webhooks.change", parameters=changes)
    flash("The webhook settings are saved." if form.url.data else "Webhooks are off.", "success")
    return redirect(url_for("settings.notifications"))


def _page(
    status: int = 200,
    *,
    form: WebhookForm | None = None,
    fragment: str = PAGE,
    **context: object,
) -> Response:
    """The page, or the `fragment` it includes; the secret only masked unless `context` holds
    one just revealed."""
    merchant = current_user.merchant
    endpoint = webhooks.endpoint_of(merchant)
    return render_page(
        PAGE,
        fragment,
        status,
        form=form or _webhook_form(endpoint, formdata=None),
        endpoint=endpoint,
        masked_secret=webhooks.masked_secret(endpoint) if endpoint else None,
        previous_until=webhooks.previous_signs_until(endpoint) if endpoint else None,
        log=local_page(webhooks.attempts_of(merchant), per_page=PER_PAGE),
        queued=webhooks.queued_by_hand(merchant),
        log_poller=LOG_POLLER,
        zone=user_zone_name(),
        mail_on=outbox.enabled(),
        **context,
    )


@bp.route("/notifications/secret", methods=["GET", "POST"])
@roles(Role.OWNER)
def notifications_secret() -> Response:
    """Ask to reveal the signing secret; the POST shows it, audited (never with the secret).
    For htmx, only the secret's part of the page."""
    endpoint = webhooks.endpoint_of(current_user.merchant) or abort(404)
    owner = _owner()
    form = RevealSecretForm()
    password = None if owner.two_factor_enabled else form.password
    status = form_refused(form, owner, purpose="webhook_secret", password_field=password)
    if status:
        audit_refused("webhooks.reveal_secret", form, status)
        return _page(status, fragment=SECRET_FRAGMENT, reveal_form=form)
    audit.record("webhooks.reveal_secret")
    return _page(fragment=SECRET_FRAGMENT, secret=webhooks.secret_of(endpoint))


@bp.route("/notifications/rotate", methods=["GET", "POST"])
@roles(Role.OWNER)
def notifications_rotate() -> Response:
    """Ask for confirmation on its own page, then replace the secret."""
    endpoint = webhooks.endpoint_of(current_user.merchant) or abort(404)
    form = RotateForm()
    status = form_refused(form, _owner(), purpose="webhooks")
    if status:
        audit_refused("webhooks.rotate", form, status)
        return page("settings/notifications_rotate.html", status, form=form)
    webhooks.rotate_secret(endpoint)
    audit.record("webhooks.rotate")
    flash(
        "A new secret signs webhooks. The previous one signs too for the next 24 hours.", "success"
    )
    return redirect(url_for("settings.notifications"))


@bp.route("/notifications/test", methods=["POST"])
@roles(Role.OWNER)
def notifications_test() -> Response:
    """Queue a `test` event for the worker; the log shows how the shop answered. The request
    never waits for the shop. (A bare button: the CSRF token is checked before any view.)"""
    endpoint = webhooks.endpoint_of(current_user.merchant)
    if endpoint is None or not endpoint.enabled:
        flash("Save a webhook URL first.", "error")
        return redirect(url_for("settings.notifications"))
    try:
        delivery = webhooks.send_test_event(endpoint)
    except webhooks.TooManySends:
        return _too_many("webhooks.test")
    audit.record("webhooks.test", parameters={"event": delivery.event.public_id})
    flash(
        f"Test event {delivery.event.public_id} is queued: the delivery log shows the shop's "
        "answer in a few seconds.",
        "success",
    )
    return redirect(url_for("settings.notifications"))


@bp.route("/notifications/deliveries/<int:delivery_id>/resend", methods=["POST"])
@roles(Role.OWNER)
def notifications_resend(delivery_id: int) -> Response:
    """Queue the delivery's event again, under the same id."""
    delivery: WebhookDelivery = webhooks.delivery_of(current_user.merchant, delivery_id) or abort(
        404
    )
    event_id = delivery.event.public_id
    try:
        queued = webhooks.resend(delivery)
    except webhooks.TooManySends:
        return _too_many("webhooks.resend", {"event": event_id})
    audit.record("webhooks.resend", parameters={"event": event_id})
    flash(
        f"Event {event_id} is queued again: the delivery log shows the shop's answer in a few "
        "seconds."
        if queued
        else f"Event {event_id} is being sent right now; it is in the log when done.",
        "success",
    )
    return redirect(url_for("settings.notifications"))


def _too_many(action: str, parameters: dict | None = None) -> Response:
    """429: the endpoint's limit of test events and resends is reached; nothing was queued."""
    audit.record(action, parameters=parameters, error=TOO_MANY)
    return _page(429, refusal=TOO_MANY)

"""/settings/notifications: the webhooks an owner's shop receives (see docs/webhooks.md).

The URL, the event types, the signing secret and its rotation, a test event, and the delivery
log with Resend. Changing the URL or rotating the secret asks an owner with two-factor on for a
fresh code, as the other settings do: a stolen session must not send the merchant's payments to
another address, nor learn a secret the shop will trust. The e-mail part of the page belongs to
the e-mail settings (`settings/notifications_email.html`).
"""

from __future__ import annotations

from flask import abort, flash, redirect, url_for
from flask_login import current_user
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response
from wtforms import SelectChoice, SelectMultipleField, SubmitField, URLField
from wtforms.validators import Length, Optional, ValidationError
from wtforms.widgets import CheckboxInput, ListWidget

from portal.models import Role, User, WebhookDelivery
from portal.rules import audit, outbox, webhooks
from portal.settings import bp
from portal.settings.forms import STEP_UP_LABEL
from portal.web.access import roles
from portal.web.fields import CodeField, strip
from portal.web.formatting import user_zone_name
from portal.web.lists import local_page
from portal.web.pages import page
from portal.web.step_up import form_refused

URL_PROBLEMS = {
    webhooks.UrlProblem.NOT_WEB: "Enter an address starting with http:// or https://, such as "
    "https://shop.example.com/webhooks.",
    webhooks.UrlProblem.USER: "Enter the address without a user name or password.",
    webhooks.UrlProblem.UNKNOWN_HOST: "That host cannot be found. Check the address.",
    webhooks.UrlProblem.PRIVATE: "That address is private or local: the portal sends webhooks "
    "only to addresses on the internet.",
}
PER_PAGE = 25


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


def _owner() -> User:
    return current_user._get_current_object()


@bp.route("/notifications", methods=["GET", "POST"])
@roles(Role.OWNER)
def notifications() -> Response:
    """The webhook settings and the delivery log; a POST saves the URL and the types."""
    merchant = current_user.merchant
    endpoint = webhooks.endpoint_of(merchant)
    form = WebhookForm(
        url=endpoint.url if endpoint else "",
        event_types=endpoint.event_types if endpoint else [t.value for t in webhooks.DEFAULT_TYPES],
    )
    status = form_refused(form, _owner(), purpose="webhooks")
    if status:
        return _page(form, status)
    webhooks.save_endpoint(merchant, form.url.data or "", form.event_types.data or [])
    audit.record(
        "webhooks.change",
        parameters={"url": form.url.data or None, "event_types": ", ".join(form.event_types.data)},
    )
    flash("The webhook settings are saved." if form.url.data else "Webhooks are off.", "success")
    return redirect(url_for("settings.notifications"))


def _page(form: WebhookForm, status: int = 200) -> Response:
    endpoint = webhooks.endpoint_of(current_user.merchant)
    return page(
        "settings/notifications.html",
        status,
        form=form,
        endpoint=endpoint,
        secret=webhooks.secret_of(endpoint) if endpoint else None,
        previous_until=webhooks.previous_signs_until(endpoint) if endpoint else None,
        log=local_page(webhooks.attempts_of(current_user.merchant), per_page=PER_PAGE),
        zone=user_zone_name(),
        mail_on=outbox.enabled(),
    )


@bp.route("/notifications/rotate", methods=["GET", "POST"])
@roles(Role.OWNER)
def notifications_rotate() -> Response:
    """Ask for confirmation on its own page, then replace the secret."""
    endpoint = webhooks.endpoint_of(current_user.merchant) or abort(404)
    form = RotateForm()
    status = form_refused(form, _owner(), purpose="webhooks")
    if status:
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
    """Send a `test` event to the shop now; its attempt shows in the log. (A bare button: the
    CSRF token is checked before any view.)"""
    endpoint = webhooks.endpoint_of(current_user.merchant)
    if endpoint is None or not endpoint.enabled:
        flash("Save a webhook URL first.", "error")
        return redirect(url_for("settings.notifications"))
    delivery = webhooks.send_test_event(endpoint)
    audit.record("webhooks.test", parameters={"event": delivery.event.public_id})
    flash(f"Test event {delivery.event.public_id} sent: see the delivery log.", "success")
    return redirect(url_for("settings.notifications"))


@bp.route("/notifications/deliveries/<int:delivery_id>/resend", methods=["POST"])
@roles(Role.OWNER)
def notifications_resend(delivery_id: int) -> Response:
    """Send the delivery's event again now, under the same id."""
    delivery: WebhookDelivery = webhooks.delivery_of(current_user.merchant, delivery_id) or abort(
        404
    )
    event_id = delivery.event.public_id
    sent = webhooks.resend(delivery)
    audit.record("webhooks.resend", parameters={"event": event_id})
    flash(
        f"Event {event_id} sent again: see the delivery log."
        if sent
        else f"Event {event_id} is being sent right now; it is in the log when done.",
        "success",
    )
    return redirect(url_for("settings.notifications"))

"""/settings/notifications: the webhooks an owner's shops receive (see docs/webhooks.md).

Up to 10 endpoints, each with its URL, event types, signing secret and its rotation, on/off, a
test event, and its delivery log (what was sent and answered) with Resend. `?endpoint_id=`
names the endpoint each view works on (the merchant's first without it; `new` for the form that
adds one); another merchant's is not found.

Changing the URL or rotating the secret asks an owner with two-factor on for a
fresh code, as the other settings do: a stolen session must not send the merchant's payments to
another address, nor learn a secret the shop will trust. So the secret is shown masked, and
revealed (audited) only after a fresh code, or the password for an owner without two-factor,
as a voucher's code. Test events and resends are queued for the worker (limited per endpoint):
the owner's request never waits for the shop. Refused changes are audited with their reasons.
"""

from __future__ import annotations

from flask import abort, flash, redirect, request, url_for
from flask_login import current_user
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response
from wtforms import (
    DateField,
    PasswordField,
    SelectChoice,
    SelectMultipleField,
    SubmitField,
    URLField,
)
from wtforms.validators import DataRequired, Length, Optional, ValidationError
from wtforms.widgets import CheckboxInput, ListWidget

from portal.identity.models import Role, User
from portal.identity.rules import audit
from portal.live.models import WebhookDelivery, WebhookEndpoint
from portal.live.rules import outbox, webhook_schemas, webhooks
from portal.periods import Period
from portal.settings.pages import bp
from portal.settings.pages.forms import STEP_UP_LABEL
from portal.web.access import roles
from portal.web.fields import CodeField, strip
from portal.web.formatting import user_zone, user_zone_name
from portal.web.lists import local_page
from portal.web.rendering import page, polled_by, render_page
from portal.web.step_up import audit_refused, form_refused

URL_PROBLEMS = {
    webhooks.UrlProblem.NOT_WEB: "Enter an address starting with http:// or https://, such as "
    "https://shop.example.com/webhooks.",
    webhooks.UrlProblem.USER: "Enter the address without a user name or password.",
    webhooks.UrlProblem.HOST: "Enter the address of the shop's server as letters, digits, dots "
    "and hyphens, such as shop.example.com, or as an IP address: no % escapes or other signs.",
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
TOO_MANY_REPLAYS = "Too many replays to this endpoint. Try again later: nothing was queued."
NEW = "new"
REPLAY = "replay"  # the replay form's prefix: its password field is not the reveal form's
TOO_MANY_ENDPOINTS = (
    f"You have {webhooks.MAX_ENDPOINTS} endpoints, the most there can be: remove one first."
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


class ReplayForm(FlaskForm):
    """A period's events sent again, at most 30 days back: a fresh code with two-factor on,
    else the current password, as for the secret (a replay re-sends payments to a shop)."""

    since = DateField("From", validators=[DataRequired()])
    until = DateField("To", validators=[DataRequired()])
    password = PasswordField("Password to confirm")
    code = CodeField(STEP_UP_LABEL)
    submit = SubmitField("Replay events")


def _webhook_form(endpoint: WebhookEndpoint | None, **options: object) -> WebhookForm:
    """The form with the saved URL and types (the default types before the first save)."""
    return WebhookForm(
        url=endpoint.url if endpoint else "",
        event_types=endpoint.event_types if endpoint else [t.value for t in webhooks.DEFAULT_TYPES],
        **options,
    )


def _owner() -> User:
    return current_user._get_current_object()


def _chosen() -> WebhookEndpoint | None:
    """The endpoint `?endpoint_id=` names, or the merchant's first; None for a new one (`new`, or
    a merchant without any). 404 for an id that is not one of the merchant's."""
    chosen = request.args.get("endpoint_id")
    if chosen == NEW:
        return None
    if chosen is not None and not chosen.isdigit():
        abort(404)
    endpoint = webhooks.endpoint_of(current_user.merchant, int(chosen) if chosen else None)
    if chosen and endpoint is None:
        abort(404)
    return endpoint


def _back(endpoint: WebhookEndpoint | None) -> Response:
    """To the endpoint's settings (Post/Redirect/Get)."""
    return redirect(
        url_for("settings.notifications", endpoint_id=endpoint.id if endpoint else None)
    )


@bp.route("/notifications", methods=["GET", "POST"])
@roles(Role.OWNER)
def notifications() -> Response:
    """The webhook settings and the delivery log; a POST saves the URL and the types. The log
    asks for itself (the fragment alone) while a test event or a resend waits for the worker."""
    endpoint = _chosen()
    form = _webhook_form(endpoint)
    status = form_refused(form, _owner(), purpose="webhooks")
    changes = {"url": form.url.data or None, "event_types": ", ".join(form.event_types.data or [])}
    if status:
        audit_refused("webhooks.change", form, status, changes)
        fragment = LOG_FRAGMENT if polled_by(LOG_POLLER) else PAGE
        return _page(endpoint, status, form=form, fragment=fragment)
    url, types = form.url.data or "", form.event_types.data or []
    try:
        saved = (
            webhooks.save_endpoint(current_user.merchant, url, types, endpoint)
            if endpoint
            else webhooks.add_endpoint(current_user.merchant, url, types)
        )
    except webhooks.TooManyEndpoints:
        audit.record("webhooks.change", parameters=changes, error=TOO_MANY_ENDPOINTS)
        return _page(endpoint, 422, form=form, refusal=TOO_MANY_ENDPOINTS)
    audit.record("webhooks.change", parameters=changes | {"endpoint": saved.id})
    flash("The webhook settings are saved." if form.url.data else "Webhooks are off.", "success")
    return _back(saved)


def _page(
    endpoint: WebhookEndpoint | None,
    status: int = 200,
    *,
    form: WebhookForm | None = None,
    fragment: str = PAGE,
    **context: object,
) -> Response:
    """The page of `endpoint` (the form that adds one for None), or the `fragment` it
    includes; the secret only masked unless `context` holds one just revealed."""
    return render_page(
        PAGE,
        fragment,
        status,
        form=form or _webhook_form(endpoint, formdata=None),
        endpoint=endpoint,
        endpoints=webhooks.endpoints_of(current_user.merchant),
        max_endpoints=webhooks.MAX_ENDPOINTS,
        masked_secret=webhooks.masked_secret(endpoint) if endpoint else None,
        previous_until=webhooks.previous_signs_until(endpoint) if endpoint else None,
        log=local_page(webhooks.attempts_of(endpoint), per_page=PER_PAGE) if endpoint else None,
        queued=webhooks.queued_by_hand(endpoint) if endpoint else [],
        catalogue=webhook_schemas.catalogue(),
        replay_form=context.pop("replay_form", None) or ReplayForm(formdata=None, prefix=REPLAY),
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
    endpoint = _chosen() or abort(404)
    form = RevealSecretForm()
    status = _second_factor_refused(form, "webhook_secret")
    if status:
        audit_refused("webhooks.reveal_secret", form, status)
        return _page(endpoint, status, fragment=SECRET_FRAGMENT, reveal_form=form)
    audit.record("webhooks.reveal_secret", parameters={"endpoint": endpoint.id})
    return _page(endpoint, fragment=SECRET_FRAGMENT, secret=webhooks.secret_of(endpoint))


def _second_factor_refused(form: FlaskForm, purpose: str) -> int | None:
    """A fresh code for an owner with two-factor on, the password (a sign-in attempt) for one
    without: the forms that hand out a secret or send payments again."""
    owner = _owner()
    password = None if owner.has_second_factor else form["password"]
    return form_refused(form, owner, purpose=purpose, password_field=password)


@bp.route("/notifications/replay", methods=["POST"])
@roles(Role.OWNER)
def notifications_replay() -> Response:
    """Queue, for the worker, the period's events (days in the owner's zone) again."""
    endpoint = _chosen() or abort(404)
    form = ReplayForm(prefix=REPLAY)
    status = _second_factor_refused(form, "webhook_replay")
    period = {"endpoint": endpoint.id, "from": str(form.since.data), "to": str(form.until.data)}
    if status:
        audit_refused("webhooks.replay", form, status, period)
        return _page(endpoint, status, replay_form=form)
    start, end = Period(form.since.data, form.until.data, user_zone()).instants
    try:
        webhooks.ask_replay(endpoint, start, end)
    except webhooks.TooManySends:
        return _too_many(endpoint, "webhooks.replay", period, TOO_MANY_REPLAYS)
    audit.record("webhooks.replay", parameters=period)
    flash(
        "The worker sends that period's events again (at most 30 days back), with their ids: "
        "the delivery log shows them in a few seconds.",
        "success",
    )
    return _back(endpoint)


@bp.route("/notifications/rotate", methods=["GET", "POST"])
@roles(Role.OWNER)
def notifications_rotate() -> Response:
    """Ask for confirmation on its own page, then replace the secret."""
    endpoint = _chosen() or abort(404)
    form = RotateForm()
    status = form_refused(form, _owner(), purpose="webhooks")
    if status:
        audit_refused("webhooks.rotate", form, status)
        return page("settings/notifications_rotate.html", status, form=form, endpoint=endpoint)
    webhooks.rotate_secret(endpoint)
    audit.record("webhooks.rotate", parameters={"endpoint": endpoint.id})
    flash(
        "A new secret signs webhooks. The previous one signs too for the next 24 hours.", "success"
    )
    return _back(endpoint)


@bp.route("/notifications/switch", methods=["POST"])
@roles(Role.OWNER)
def notifications_switch() -> Response:
    """Switch the endpoint off, or on again (after a 410 Gone switched it off): its URL, types
    and secret stay. (A bare button: the CSRF token is checked before any view.)"""
    endpoint = _chosen() or abort(404)
    webhooks.switch(endpoint, on=not endpoint.enabled)
    audit.record("webhooks.switch", parameters={"endpoint": endpoint.id, "on": endpoint.enabled})
    flash("The endpoint is on." if endpoint.enabled else "The endpoint is off.", "success")
    return _back(endpoint)


@bp.route("/notifications/test", methods=["POST"])
@roles(Role.OWNER)
def notifications_test() -> Response:
    """Queue a `test` event for the worker; the log shows how the shop answered. The request
    never waits for the shop. (A bare button: the CSRF token is checked before any view.)"""
    endpoint = _chosen()
    if endpoint is None or not endpoint.enabled:
        flash(
            "Save a webhook URL first."
            if endpoint is None
            else "This endpoint is off: switch it on to send it a test event.",
            "error",
        )
        return _back(endpoint)
    try:
        delivery = webhooks.send_test_event(endpoint)
    except webhooks.TooManySends:
        return _too_many(endpoint, "webhooks.test")
    audit.record("webhooks.test", parameters={"event": delivery.event.public_id})
    flash(
        f"Test event {delivery.event.public_id} is queued: the delivery log shows the shop's "
        "answer in a few seconds.",
        "success",
    )
    return _back(endpoint)


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
        return _too_many(delivery.endpoint, "webhooks.resend", {"event": event_id})
    audit.record("webhooks.resend", parameters={"event": event_id})
    flash(
        f"Event {event_id} is queued again: the delivery log shows the shop's answer in a few "
        "seconds."
        if queued
        else f"Event {event_id} is being sent right now; it is in the log when done.",
        "success",
    )
    return _back(delivery.endpoint)


def _too_many(
    endpoint: WebhookEndpoint, action: str, parameters: dict | None = None, words: str = TOO_MANY
) -> Response:
    """429: the endpoint's limit of test events and resends (or replays) is reached; nothing
    was queued."""
    audit.record(action, parameters=parameters, error=words)
    return _page(endpoint, 429, refusal=words)

"""Error pages, as full pages or, for an htmx request, as the fragment the page includes."""

from __future__ import annotations

import logging
import re

from flask import Flask, current_app, g, request, url_for
from flask_login import current_user
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException, InternalServerError
from werkzeug.wrappers import Response

from portal.api import ApiRefusal, ApiUnavailable
from portal.api.wire import CONTROL_CHARACTER
from portal.crypto import TokenKeyError
from portal.extensions import db
from portal.identity.models import Role
from portal.settings.rules import api_down
from portal.settings.rules.connection import ApiNotConnected
from portal.web.error_messages import error_message
from portal.web.rendering import render_page
from portal.web.security import ControlCharacterRefused

MESSAGES = {
    400: ("Bad request", "The request could not be understood. Go back and try again."),
    403: (
        "You do not have access to this page",
        "Your role does not allow this page or action. Ask an owner of your merchant if you "
        "need it.",
    ),
    404: ("Page not found", "There is no page at this address."),
    405: ("Not allowed", "This page does not accept that kind of request."),
    413: (
        "Too much data",
        "The request was larger than the portal accepts, so nothing was done. Go back and "
        "send less.",
    ),
    429: ("Too many requests", "Wait a few minutes, then try again."),
    500: ("Something went wrong", "The error has been logged. Try again in a moment."),
}


# The 500 page when the layout cannot be made (it needs the database to know who is signed in).
PLAIN_500 = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{0}</title></head>'
    "<body><h1>{0}</h1><p>{1}</p></body></html>".format(*MESSAGES[500])
)


def error_page(
    status: int,
    title: str,
    message: str,
    *,
    action: tuple[str, str] | None = None,
    fresh: tuple[str, str] | None = None,
) -> Response:
    """The error page (or fragment) with a status, a title and what to do about it (`action`,
    and `fresh`: a link to start again, such as a new form)."""
    return render_page(
        "errors/error.html",
        "errors/_error.html",
        status,
        code=status,
        title=title,
        message=message,
        action=action,
        fresh=fresh,
    )


def http_error(error: HTTPException) -> Response | HTTPException:
    if error.code is None or error.code < 400:
        return error  # redirects raised as exceptions
    title, message = MESSAGES.get(error.code, (error.name, error.description or ""))
    return error_page(error.code, title, message)


def csrf_error(_error: CSRFError) -> Response:
    return error_page(
        400,
        "This form has expired",
        "The form was too old or did not come from this site, so nothing was done. "
        "Reload the page and try again.",
    )


def control_character(error: ControlCharacterRefused) -> Response:
    """Which field (or the address) held the character, and that nothing happened."""
    if error.field is None:
        where = "The address of the page"
    else:
        where = f"The field “{_label(error.field)}”"
    return error_page(
        422,
        "Characters that cannot be used",
        f"{where} holds a control character (such as a NUL byte), which the portal does not "
        "accept. Nothing was sent or saved. Go back, remove it and try again.",
    )


def _label(field_name: str) -> str:
    """A form field's name as words (`order_id` → "Order id"), without what made it refused."""
    words = CONTROL_CHARACTER.sub("", field_name).replace("_", " ").strip()[:40]
    return words.capitalize() or "?"


def note_unavailable() -> None:
    """This request found the signed-in merchant's payment service unavailable: its pages are
    read-only from now, for a moment (`portal.web.api_errors.read_only`)."""
    g.api_read_only = True
    if current_user.is_authenticated:
        api_down.mark_down(current_user.merchant)


def api_unavailable(error: ApiUnavailable) -> Response:
    """No answer (502) or no answer in time (504) from the payment service. A read marks the
    service down; a change without an answer does not (its page asks to check the record, which
    the API answers best)."""
    current_app.logger.warning("Payment service unavailable on %s: %s", request.path, error)
    if request.method == "GET":
        note_unavailable()
    status = 504 if error.timeout else 502
    return error_page(
        status,
        "The payment service is unavailable",
        "The payment service did not answer"
        + (" in time" if error.timeout else "")
        + ". Nothing was shown or changed here; try again in a moment.",
    )


def api_error(error: ApiRefusal) -> Response:
    """An API refusal that no view handled: most often stored credentials that stopped working."""
    current_app.logger.warning("Payment service error on %s: code %s", request.path, error.code)
    message = error_message(error.code)
    return error_page(
        502,
        "The payment service refused the request",
        message,
        action=_settings_action("Check the API settings"),
    )


def not_connected(_error: ApiNotConnected) -> Response:
    message = "Your merchant is not connected to the payment service yet."
    action = _settings_action("Connect at API settings")
    if action is None:
        message += " Ask an owner of your merchant to connect it."
    return error_page(409, "Not connected to the payment service", message, action=action)


def token_key_error(error: TokenKeyError) -> Response:
    current_app.logger.error("%s", error)
    return error_page(500, *MESSAGES[500])


def internal_error(_error: InternalServerError) -> Response:
    """The 500 page. The failed request may have left its database transaction broken, and the
    page asks the database who is signed in: roll back first. When the database itself is what
    failed, the page is the same words without the portal's layout."""
    try:
        db.session.rollback()
        return error_page(500, *MESSAGES[500])
    except Exception:
        current_app.logger.exception("The 500 page could not be made; sent in plain words")
        return Response(PLAIN_500, 500, mimetype="text/html")


class RedactCredentials(logging.Filter):
    """Masks `Bearer <token>` in what the application logger writes, tracebacks included.

    Flask logs an unhandled exception with its traceback before the 500 page is made, and an
    exception's message can quote the request's Authorization header (http.client's "Invalid
    header value b'Bearer ...'" for a token with a line break): the token must not reach the
    log with it.
    """

    CREDENTIAL = re.compile(r"(Bearer)(\s+)[^\s'\"\\]+", re.IGNORECASE)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = self.CREDENTIAL.sub(r"\1\2••••", message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.CREDENTIAL.sub(r"\1\2••••", record.exc_text)
        return True


REDACT_CREDENTIALS = RedactCredentials()


def _settings_action(label: str) -> tuple[str, str] | None:
    """A link to /settings/api for owners, who are the ones who can fix the connection."""
    if current_user.is_authenticated and current_user.role == Role.OWNER:
        return (label, url_for("settings.api"))
    return None


def init_app(app: Flask) -> None:
    # The loggers that may see a token: the application's (tracebacks) and the API client's.
    # A logger's filters apply only to its own records, so each one gets it (added once).
    for logger in (app.logger, logging.getLogger("portal.api.client")):
        logger.addFilter(REDACT_CREDENTIALS)
    app.register_error_handler(HTTPException, http_error)
    app.register_error_handler(CSRFError, csrf_error)
    app.register_error_handler(ControlCharacterRefused, control_character)
    app.register_error_handler(InternalServerError, internal_error)
    app.register_error_handler(ApiUnavailable, api_unavailable)
    app.register_error_handler(ApiRefusal, api_error)
    app.register_error_handler(ApiNotConnected, not_connected)
    app.register_error_handler(TokenKeyError, token_key_error)

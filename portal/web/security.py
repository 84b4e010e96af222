"""HTTP hardening: safe `next` targets, the session cookie's Secure flag, response headers."""

from __future__ import annotations

from itertools import chain
from urllib.parse import unquote, urlsplit

from flask import Flask, Response, current_app, request
from flask.sessions import SecureCookieSessionInterface, SessionMixin
from flask_limiter import RouteLimit
from flask_login import current_user
from werkzeug.exceptions import UnprocessableEntity
from werkzeug.middleware.proxy_fix import ProxyFix

from portal.api.wire import CONTROL_CHARACTER
from portal.extensions import limiter

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "object-src 'none'",
    ]
)


class ControlCharacterRefused(UnprocessableEntity):
    """A request carried a control character; `field` names where (None: in the address)."""

    def __init__(self, field: str | None) -> None:
        super().__init__()
        self.field = field


def refuse_control_characters() -> None:
    """Before any view: a control character in the address, the query or a form is refused
    (the ones the API client refuses in answers: none belongs in what a person types, and
    PostgreSQL cannot store NUL).

    Checked once here, for every field of every form and every query parameter (present and
    future), before anything reads the database, calls the API or stores a thing.
    """
    if CONTROL_CHARACTER.search(request.path):
        raise ControlCharacterRefused(None)
    for name, value in chain(request.args.items(multi=True), request.form.items(multi=True)):
        if CONTROL_CHARACTER.search(name) or CONTROL_CHARACTER.search(value):
            raise ControlCharacterRefused(name)


def safe_next(target: str | None) -> str | None:
    """`target` when it is a path on this site, else None (no open redirect, encoded or not)."""
    if not target:
        return None
    candidate = target
    for _ in range(3):  # the browser may decode again: check every decoding
        if not _is_local_path(candidate):
            return None
        decoded = unquote(candidate)
        if decoded == candidate:
            return target
        candidate = decoded
    return None


def _is_local_path(value: str) -> bool:
    if any(ord(char) < 0x20 or char in "\\\x7f" for char in value):
        return False
    if not value.startswith("/") or value.startswith("//"):
        return False
    parts = urlsplit(value)
    return not parts.scheme and not parts.netloc


class PortalSessionInterface(SecureCookieSessionInterface):
    """Marks the session cookie Secure whenever the request came over HTTPS; leaves static
    files' answers without a cookie."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return super().get_cookie_secure(app) or request.is_secure

    def save_session(self, app: Flask, session: SessionMixin, response: Response) -> None:
        """A static file's answer sets no cookie and does not vary by cookie, unless something
        changed the session on the way: Flask-Login looks into the session after every request,
        which alone would add `Vary: Cookie` and have a shared cache (a proxy, a CDN) keep a
        copy of each file per visitor."""
        if request.endpoint != "static" or session.modified:
            super().save_session(app, session, response)


def set_security_headers(response: Response) -> Response:
    """After every response: CSP and friends; never cache what a signed-in user sees.

    Nor any page of signing in: its second step is still anonymous but carries typed codes.
    """
    headers = response.headers
    headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    headers.setdefault("X-Content-Type-Options", "nosniff")
    headers.setdefault("Referrer-Policy", "same-origin")
    headers.setdefault("X-Frame-Options", "DENY")
    headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    if request.is_secure:
        headers.setdefault("Strict-Transport-Security", "max-age=31536000")
    # Static files first: they need no session, and looking the user up costs a query.
    if request.endpoint != "static" and (
        request.blueprint == "auth" or current_user.is_authenticated
    ):
        headers["Cache-Control"] = "no-store"
    return response


def init_app(app: Flask) -> None:
    """Trust proxies only as configured, and install the cookie and header rules."""
    proxies = int(app.config["TRUSTED_PROXIES"])
    if proxies:
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies, x_port=proxies
        )
    app.session_interface = PortalSessionInterface()
    app.before_request(refuse_control_characters)
    app.after_request(set_security_headers)


def customer_page_limit() -> RouteLimit:
    """The rate limit of the pages customers open without signing in (checkout, refund claim):
    one counter per address for all of them, `PORTAL_CHECKOUT_LIMIT_PER_ADDRESS`."""
    return limiter.shared_limit(
        lambda: current_app.config["CHECKOUT_LIMIT_PER_ADDRESS"], scope="checkout"
    )


def private_page_headers(response: Response) -> Response:
    """A customer's URL is their key: keep it out of caches, search engines and Referer."""
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Robots-Tag"] = "noindex, nofollow"
    return response

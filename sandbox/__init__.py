"""A local implementation of the Merchant Payment Service API v1 (see docs/sandbox.md).

Its own Flask application with its own SQLite database; it never imports the portal.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

from flask import Flask, Response, current_app, request
from flask.json.provider import DefaultJSONProvider
from werkzeug.exceptions import HTTPException

from . import api, control, db, payment_page, treasury
from .errors import ApiError
from .faults import VERSIONED_PATH, FaultInjector
from .seed import seed as seed_database

OPENAPI_DOCUMENT = Path(__file__).with_name("openapi.json")
# The API requests the sandbox remembers (`GET /_control/requests`), the newest ones.
REQUEST_LOG_SIZE = 1000


def create_app(
    database: str,
    token: str,
    company_token: str | None = None,
    *,
    operation_ttl_minutes: int = 60,
    seed: int = 0,
    random_seed: int = 1,
) -> Flask:
    app = Flask(__name__)
    app.config.update(
        DATABASE=database,
        TOKEN=token,
        COMPANY_TOKEN=company_token,
        OPERATION_TTL_MINUTES=operation_ttl_minutes,
        MAX_CONTENT_LENGTH=1024 * 1024,
    )
    assert isinstance(app.json, DefaultJSONProvider)  # Flask's own, which has the setting
    app.json.sort_keys = False
    _prepare_database(database, seed, random_seed, operation_ttl_minutes)

    app.register_blueprint(api.bp, url_prefix="/v1", name="api")
    app.register_blueprint(api.bp, url_prefix="/sandbox/v1", name="sandbox_api")
    app.register_blueprint(control.bp)
    app.register_blueprint(payment_page.bp)
    app.teardown_appcontext(db.close)
    app.before_request(_refuse_other_versions)
    app.extensions["request_log"] = deque(maxlen=REQUEST_LOG_SIZE)
    app.before_request(_log_api_request)
    app.register_error_handler(ApiError, lambda error: error.response())
    app.register_error_handler(HTTPException, _http_error)
    app.add_url_rule("/openapi.json", "openapi", _openapi_document)

    injector = FaultInjector(app.wsgi_app)
    app.extensions["fault_injector"] = injector
    app.wsgi_app = injector  # type: ignore[method-assign]  # Flask's way to add middleware
    return app


def _prepare_database(path: str, seed: int, random_seed: int, ttl_minutes: int) -> None:
    db.initialise(path)
    connection = db.connect(path)
    try:
        treasury.open_wallets(connection)  # before the seeded history, which moves them
        seed_database(connection, seed, random_seed, ttl_minutes)
    finally:
        connection.close()


def _refuse_other_versions() -> None:
    """Any version but v1 is a removed action (code 1, 410), as the API documents."""
    match = VERSIONED_PATH.match(request.path)
    if match and match.group(1) != "1":
        raise ApiError(1)


def _log_api_request() -> None:
    """Remember each API request that reached the sandbox: a test can tell that nothing was
    sent (no PUT), which the records alone cannot always show."""
    if VERSIONED_PATH.match(request.path):
        log = current_app.extensions["request_log"]
        log.append({"method": request.method, "path": request.path})


def _is_api_request() -> bool:
    return bool(VERSIONED_PATH.match(request.path)) or request.path.startswith("/_control")


def _http_error(error: HTTPException):
    """A request the API cannot place (no such path, a method the path does not take) is code 0
    as the error table words it: 400 "Something went wrong", the only status and message the API
    documents for that code, so a client never meets a 404/405 it cannot tell from a record
    "not found"."""
    if not _is_api_request():
        return error
    if error.code == 413:
        return ApiError(9, errors={"body": ["The body is too large."]}).response()
    return ApiError(0).response()


def _openapi_document() -> Response:
    return Response(OPENAPI_DOCUMENT.read_bytes(), mimetype="application/json")

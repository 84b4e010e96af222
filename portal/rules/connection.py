"""The way to the Merchant API: a configured client, and checked, encrypted credentials."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TypeVar
from urllib.parse import urlsplit

import requests
from flask import current_app

from portal.api import ApiRefusal, ApiUnavailable, MerchantApiClient, make_session, mask_token
from portal.extensions import db
from portal.models import ApiConnection, Environment, Merchant
from portal.rules import crypto

T = TypeVar("T")
SESSION_EXTENSION = "portal_api_session"
CALLS_EXTENSION = "portal_api_calls"
# Connections kept open to the API per worker process: its threads (gunicorn.conf.py), each
# with a page that may read several pages ahead and ask for other parts at once.
SHARED_POOL_SIZE = 32
# Why an empty token field does not keep the stored token after the base URL or environment
# changed.
RETYPE = "stored tokens are only sent to the base URL and environment they were saved with."


class ApiNotConnected(Exception):
    """The merchant has no API credentials yet; an owner connects at /settings/api."""


class ConnectionRejected(Exception):
    """The API did not accept the credentials; the message says what failed, for the person."""


class TokensNeeded(Exception):
    """Tokens the person must type; `problems` maps a form field's name to what to say there."""

    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__(" ".join(problems.values()))
        self.problems = problems


@dataclass(frozen=True)
class Credentials:
    """What an owner enters to connect; tokens in clear only for the time of the request."""

    base_url: str
    environment: Environment
    token: str
    company_token: str | None = None


def base_url_problem(url: str) -> str | None:
    """Why `url` cannot be a base URL (an http(s) address, without what the portal adds), or
    why the portal may not send tokens there (a host not in `PORTAL_API_ALLOWED_HOSTS`).

    A user name or a backslash is refused: Python's URL parser and the one that sends requests
    read the host of `http://evil.test\\@api.example.com` differently.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        return "Enter a valid address, such as https://api.example.com."
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "Enter an address starting with http:// or https://."
    if "@" in parts.netloc or "\\" in url or any(char.isspace() for char in url):
        return "Enter the address without a user name, spaces or backslashes."
    if parts.query or parts.fragment:
        return "Enter the address without a query (?) or fragment (#)."
    if parts.path.rstrip("/").endswith(("/v1", "/sandbox")):
        return "Enter the address without /sandbox or /v1: the portal adds them."
    allowed = current_app.config["API_ALLOWED_HOSTS"]
    if allowed and parts.hostname not in allowed:
        return (
            f"This portal connects only to {', '.join(allowed)}. "
            "Ask the portal's operator to allow another host."
        )
    return None


def new_client(credentials: Credentials) -> MerchantApiClient:
    """A client with the configured timeouts, on the application's shared connection pool."""
    config = current_app.config
    return MerchantApiClient(
        base_url=credentials.base_url,
        environment=credentials.environment.value,
        token=credentials.token,
        company_token=credentials.company_token,
        timeout=(float(config["API_TIMEOUT_CONNECT"]), float(config["API_TIMEOUT_READ"])),
        session=_shared_session(),
    )


def _shared_session() -> requests.Session:
    """One pool of connections per application, shared by every client it makes."""
    return _per_application(SESSION_EXTENSION, lambda: make_session(pool_size=SHARED_POOL_SIZE))


def in_background(call: Callable[..., T], /, **arguments: object) -> Future[T]:
    """Start an API call on another thread, so that a page can wait on several at once.

    The call needs no request context (the client holds everything it uses); its exception, if
    any, is raised again by `result()`.
    """
    executor = _per_application(
        CALLS_EXTENSION, lambda: ThreadPoolExecutor(thread_name_prefix="api")
    )
    return executor.submit(call, **arguments)


def _per_application(key: str, make: Callable[[], T]) -> T:
    """One `make()` per application in each worker process, made at its first use.

    Threads of a worker may race to make it: `setdefault` keeps the first, the other is dropped.
    """
    extensions = current_app.extensions
    if key not in extensions:
        extensions.setdefault(key, make())
    return extensions[key]


def stored_credentials(connection: ApiConnection) -> Credentials:
    company = connection.company_token_encrypted
    return Credentials(
        base_url=connection.base_url,
        environment=connection.environment,
        token=crypto.decrypt(connection.token_encrypted),
        company_token=crypto.decrypt(company) if company else None,
    )


def credentials_to_check(
    connection: ApiConnection | None, typed: Credentials, *, remove_company_token: bool
) -> Credentials:
    """What a change of the connection is checked with: the `typed` tokens, or for an empty
    field the stored one, but only while the base URL and environment stay those it was saved
    with; TokensNeeded otherwise.

    A stored token never goes anywhere else: an owner's session (a stolen cookie will do) could
    otherwise send it to a server of its own and withdraw with it straight through the API.
    """
    kept = None
    place = (typed.base_url, typed.environment)
    if connection is not None and (connection.base_url, connection.environment) == place:
        kept = stored_credentials(connection)
    token = typed.token or (kept.token if kept else "")
    company_token = None
    if not remove_company_token:
        company_token = typed.company_token or (kept.company_token if kept else None)
    problems = {}
    if not token:
        problems["token"] = (
            f"Type the application token again: {RETYPE}"
            if connection
            else "Enter the application token."
        )
    had_company_token = connection is not None and connection.company_token_encrypted is not None
    if had_company_token and not company_token and not remove_company_token:
        problems["company_token"] = f"Type the company token again, or remove it: {RETYPE}"
    if problems:
        raise TokensNeeded(problems)
    return replace(typed, token=token, company_token=company_token)


def api_client_for(merchant: Merchant) -> MerchantApiClient:
    """The client for `merchant`'s stored credentials; ApiNotConnected when there are none."""
    if merchant.api_connection is None:
        raise ApiNotConnected(merchant.name)
    return new_client(stored_credentials(merchant.api_connection))


def masked_tokens(connection: ApiConnection) -> tuple[str, str | None]:
    """The stored tokens as people may see them (`••••` and the last 4 characters)."""
    credentials = stored_credentials(connection)
    return mask_token(credentials.token) or "", mask_token(credentials.company_token)


def check(credentials: Credentials) -> None:
    """Ping the API with the credentials; ConnectionRejected says in words what failed."""
    client = new_client(credentials)
    try:
        client.ping()
        if credentials.company_token:
            _check_company_token(client)
    except ApiUnavailable as error:
        how = "did not answer in time" if error.timeout else "could not be reached"
        raise ConnectionRejected(
            f"The payment service {how} at {credentials.base_url}. "
            "Check the base URL, then try again."
        ) from error
    except ApiRefusal as error:
        reason = describe_rejection(error) or (
            f"No Merchant API answered at this base URL and environment "
            f"(HTTP {error.http_status}). Check the base URL and the environment."
        )
        raise ConnectionRejected(reason) from error


def _check_company_token(client: MerchantApiClient) -> None:
    """The voucher list is an endpoint that takes the company token: one record proves it."""
    try:
        client.list_vouchers(per_page=1)
    except ApiRefusal as error:
        if error.code == 2:
            raise ConnectionRejected(
                "The payment service rejected the company token (error 2, unauthenticated). "
                "Check the company token, or leave it empty."
            ) from error
        raise


def describe_rejection(error: ApiRefusal) -> str | None:
    """Why the API refused the credentials, in a person's words; None for other errors."""
    reasons = {
        1: "The payment service no longer supports this version of the API (error 1).",
        2: "The payment service rejected the application token (error 2, unauthenticated). "
        "Check the token.",
        3: "The payment service says the application is banned (error 3).",
        4: "The payment service says the company is banned (error 4).",
    }
    return reasons.get(error.code)


def connect(merchant: Merchant, credentials: Credentials) -> ApiConnection:
    """Check the credentials, then store them encrypted; nothing is saved when the check fails."""
    check(credentials)
    connection = merchant.api_connection or ApiConnection(merchant=merchant)
    connection.base_url = credentials.base_url
    connection.environment = credentials.environment
    connection.token_encrypted = crypto.encrypt(credentials.token)
    company = credentials.company_token
    connection.company_token_encrypted = crypto.encrypt(company) if company else None
    db.session.add(connection)
    db.session.commit()
    return connection


def rotate_stored_tokens() -> int:
    """Re-encrypt every stored token under the newest key; returns how many connections."""
    connections = db.session.scalars(db.select(ApiConnection)).all()
    for connection in connections:
        connection.token_encrypted = crypto.rotate(connection.token_encrypted)
        if connection.company_token_encrypted:
            connection.company_token_encrypted = crypto.rotate(connection.company_token_encrypted)
    db.session.commit()
    return len(connections)

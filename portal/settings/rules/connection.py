"""The way to the Merchant API: a configured client, and checked, encrypted credentials.

What stops a connection is typed (`UrlProblem`, `TokenNeed`, `ConnectionRejected`); the words
for each are the settings pages' (`portal.settings.pages.connection_messages`), for the settings
page and the commands.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TypeVar
from urllib.parse import urlsplit

import requests
import sqlalchemy as sa
from flask import current_app

from portal import crypto
from portal.api import (
    ApiFailure,
    ApiRefusal,
    ErrorCode,
    MerchantApiClient,
    make_session,
    mask_token,
)
from portal.extensions import db
from portal.identity.models import Merchant
from portal.live.models import MirrorState
from portal.payments.models import MirroredOperation, MirroredTransaction
from portal.settings.models import ApiConnection, Environment

T = TypeVar("T")
SESSION_EXTENSION = "portal_api_session"
CALLS_EXTENSION = "portal_api_calls"
# Connections kept open to the API per worker process: its threads (gunicorn.conf.py), each
# with a page that may read several pages ahead and ask for other parts at once.
SHARED_POOL_SIZE = 32


class ApiNotConnected(Exception):
    """The merchant has no API credentials yet; an owner connects at /settings/api."""


class ConnectionRejected(Exception):
    """The API did not accept the credentials at `base_url`: `failure` says how, and
    `company_token` whether the company token was what it refused (the application token
    otherwise, or the base URL)."""

    def __init__(self, failure: ApiFailure, base_url: str, *, company_token: bool = False) -> None:
        super().__init__(str(failure))
        self.failure = failure
        self.base_url = base_url
        self.company_token = company_token


class TokenNeed(enum.Enum):
    """A token the person must type for the change to be checked."""

    ENTER = "enter"  # no connection yet
    RETYPE = "retype"  # stored, but only for the base URL and environment it was saved with
    RETYPE_OR_REMOVE = "retype or remove"  # a stored company token, likewise


class TokensNeeded(Exception):
    """Tokens the person must type; `needs` maps a form field's name to the need."""

    def __init__(self, needs: dict[str, TokenNeed]) -> None:
        super().__init__(", ".join(f"{name}: {need.value}" for name, need in needs.items()))
        self.needs = needs


class UrlProblem(enum.Enum):
    """Why an address cannot be the base URL."""

    INVALID = "invalid"
    NOT_WEB = "not http(s)"
    USER_OR_SPACES = "user name, spaces or backslashes"
    QUERY = "query or fragment"
    API_PATH = "ends with /sandbox or /v1"
    HOST_NOT_ALLOWED = "host not allowed"


@dataclass(frozen=True)
class Credentials:
    """What an owner enters to connect; tokens in clear only for the time of the request."""

    base_url: str
    environment: Environment
    token: str
    company_token: str | None = None


def base_url_problem(url: str) -> UrlProblem | None:
    """Why `url` cannot be a base URL (an http(s) address, without what the portal adds), or
    why the portal may not send tokens there (a host not in `PORTAL_API_ALLOWED_HOSTS`).

    A user name or a backslash is refused: Python's URL parser and the one that sends requests
    read the host of `http://evil.test\\@api.example.com` differently.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        return UrlProblem.INVALID
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return UrlProblem.NOT_WEB
    if "@" in parts.netloc or "\\" in url or any(char.isspace() for char in url):
        return UrlProblem.USER_OR_SPACES
    if parts.query or parts.fragment:
        return UrlProblem.QUERY
    if parts.path.rstrip("/").endswith(("/v1", "/sandbox")):
        return UrlProblem.API_PATH
    allowed = current_app.config["API_ALLOWED_HOSTS"]
    if allowed and parts.hostname not in allowed:
        return UrlProblem.HOST_NOT_ALLOWED
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
        max_answer_bytes=int(config["API_MAX_ANSWER_BYTES"]),
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
    needs = {}
    if not token:
        needs["token"] = TokenNeed.RETYPE if connection else TokenNeed.ENTER
    had_company_token = connection is not None and connection.company_token_encrypted is not None
    if had_company_token and not company_token and not remove_company_token:
        needs["company_token"] = TokenNeed.RETYPE_OR_REMOVE
    if needs:
        raise TokensNeeded(needs)
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
    """Ping the API with the credentials (and the company token with a call that takes it);
    ConnectionRejected when any failed."""
    client = new_client(credentials)
    try:
        client.ping()
    except ApiFailure as error:
        raise ConnectionRejected(error, credentials.base_url) from error
    if not credentials.company_token:
        return
    try:
        # The voucher list is an endpoint that takes the company token: one record proves it.
        client.list_vouchers(per_page=1)
    except ApiFailure as error:
        refused = isinstance(error, ApiRefusal) and error.code == ErrorCode.UNAUTHENTICATED
        raise ConnectionRejected(error, credentials.base_url, company_token=refused) from error


def connect(merchant: Merchant, credentials: Credentials) -> ApiConnection:
    """Check the credentials, then store them encrypted; nothing is saved when the check fails.

    Another base URL, environment or token may be another account: it is a new connection
    (`generation`), which starts a new mirror (`_start_new_mirror`). A new company token alone
    reaches the same account's vouchers.
    """
    check(credentials)
    connection = merchant.api_connection
    if connection is None:
        connection = ApiConnection(merchant=merchant)
    elif _reaches_another_account(connection, credentials):
        _start_new_mirror(connection)
    connection.base_url = credentials.base_url
    connection.environment = credentials.environment
    connection.token_encrypted = crypto.encrypt(credentials.token)
    company = credentials.company_token
    connection.company_token_encrypted = crypto.encrypt(company) if company else None
    db.session.add(connection)
    db.session.commit()
    return connection


def _reaches_another_account(connection: ApiConnection, credentials: Credentials) -> bool:
    """Whether `credentials` may reach another account than the stored ones.

    A stored token that no key decrypts (its key was removed before `rotate-keys`) cannot be
    compared: it counts as another account, so that typing fresh tokens still reconnects.
    The company token plays no part, and is not decrypted.
    """
    place = (connection.base_url, connection.environment)
    if place != (credentials.base_url, credentials.environment):
        return True
    try:
        return crypto.decrypt(connection.token_encrypted) != credentials.token
    except crypto.TokenKeyError:
        return True


def _start_new_mirror(connection: ApiConnection) -> None:
    """The next generation of the connection, with an empty mirror: its state (watermarks,
    lease) and its rows are deleted, so the next sync is a first one (its history written with
    `notify` false), and what other connections' events remain is no longer read
    (`events.of_current_connection`).

    The mirror's state goes first: a sync of the old account holds its row locked while it
    writes a page (`mirror._renew`), so that page is committed before this delete reads the
    rows, or finds its lease gone and is not written at all.
    """
    merchant_id = connection.merchant_id
    for model in (MirrorState, MirroredTransaction, MirroredOperation):
        db.session.execute(
            sa.delete(model)
            .where(model.merchant_id == merchant_id)
            .execution_options(synchronize_session=False)
        )
    connection.generation += 1


def generation_now(
    merchant_id: int | sa.ColumnElement[int] | sa.orm.InstrumentedAttribute[int],
) -> sa.ScalarSelect[int]:
    """The generation of the merchant's connection now, as a subquery: what belongs to an
    earlier one (another account, whose ids may be the same) is left out by comparing with it."""
    return (
        sa.select(ApiConnection.generation)
        .where(ApiConnection.merchant_id == merchant_id)
        .scalar_subquery()
    )


def is_current(merchant: Merchant, generation: int) -> bool:
    """Whether `generation` is that of the merchant's API connection now (False: none): what
    an earlier one made (a refund, a checkout link) may name another account's ids."""
    connection = merchant.api_connection
    return connection is not None and connection.generation == generation

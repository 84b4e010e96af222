"""The portal's own rows, made for a test in one call: a user (any role, password,
two-factor), an API connection, a withdrawal intent, a refund, a webhook endpoint, a mail
message, audit events.

Each factory takes the application, writes and commits in an application context of its own,
and returns the new row's id (or what a test needs of it), so that it serves both tests that
hold no context and helpers that open one afterwards. Values a test does not name are plain
and valid; rows that the forms would refuse today (an address stored before it was checked)
are made here on purpose, bypassing the rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import NamedTuple

from flask import Flask

from tests.support.forms import PASSWORD
from tests.support.two_factor import enable_for

MERCHANT = "Acme"
UNREACHABLE_API = "http://127.0.0.1:9"  # the discard port: nothing answers there
APPLICATION_TOKEN = "an-application-token"


def _stored(row) -> int:
    """Add `row`, commit, and give its new id."""
    from portal.extensions import db

    db.session.add(row)
    db.session.commit()
    return row.id


@dataclass(frozen=True)
class Accounts:
    """Two merchants: Acme with one user per role, and Other with an owner."""

    owner: str = "owner@acme.test"
    operator: str = "operator@acme.test"
    accountant: str = "accountant@acme.test"
    other_owner: str = "owner@other.test"

    def by_role(self, role: str) -> str:
        return getattr(self, role)


def accounts(app: Flask) -> Accounts:
    """The users of `Accounts`, stored."""
    made = Accounts()
    for role in ("owner", "operator", "accountant"):
        user(app, made.by_role(role), role)
    user(app, made.other_owner, "owner", merchant="Other")
    return made


class NewUser(NamedTuple):
    id: int
    email: str
    totp_secret: str | None  # what their authenticator app holds, with two-factor on


def user(
    app: Flask,
    email: str,
    role: str = "accountant",
    *,
    merchant: str = MERCHANT,
    password: str = PASSWORD,
    two_factor: bool = False,
    checked: bool = True,
) -> NewUser:
    """A user of `merchant` (made if new) who signs in with `password`, with two-factor sign-in
    on if asked.

    `checked=False` stores the address as it is, without the checks `add_user` makes: a user
    stored before those checks existed, which pages and mail must still handle.
    """
    from portal.identity.models import Role, User
    from portal.identity.rules import accounts

    with app.app_context():
        owner_of = accounts.merchant_named(merchant, create=True)
        if checked:
            made = accounts.add_user(owner_of, email, Role(role), password)
        else:
            made = User(merchant=owner_of, email=email, role=Role(role))
            made.set_password(password)
            _stored(made)
        new = NewUser(made.id, made.email, None)
    return new._replace(totp_secret=enable_for(app, new.email)) if two_factor else new


def api_connection(
    app: Flask,
    *,
    merchant: str = MERCHANT,
    base_url: str = UNREACHABLE_API,
    environment: str = "sandbox",
    token: str = APPLICATION_TOKEN,
    company_token: str | None = None,
    generation: int | None = None,
) -> int:
    """The merchant's API connection as a checked save leaves it, without calling the API;
    the tokens are encrypted with the application's key."""
    from portal import crypto
    from portal.identity.rules import accounts
    from portal.settings.models import ApiConnection, Environment

    with app.app_context():
        connection = ApiConnection(
            merchant=accounts.merchant_named(merchant, create=True),
            base_url=base_url,
            environment=Environment(environment),
            token_encrypted=crypto.encrypt(token),
            company_token_encrypted=crypto.encrypt(company_token) if company_token else None,
        )
        if generation is not None:
            connection.generation = generation
        return _stored(connection)


def withdrawal_intent(
    app: Flask,
    email: str,
    key: str,
    *,
    amount: str = "0.001",
    wallet: str = "BTC",
    address: str = "tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx",
    state: str = "pending",
    at: datetime | None = None,
    **fields: object,
) -> int:
    """A withdrawal the user `email` reviewed (`key` is its form's), in `state`; `fields` sets
    the rest (operation_id, error_code, error_message...). `at` is when it was made and last
    changed."""
    from portal.identity.rules.accounts import find_user
    from portal.money.models import IntentState, WithdrawalIntent

    times = {"created_at": at, "updated_at": at} if at else {}
    with app.app_context():
        reviewer = find_user(email)
        intent = WithdrawalIntent(
            merchant_id=reviewer.merchant_id,
            user_id=reviewer.id,
            key=key,
            amount=Decimal(amount),
            wallet=wallet,
            address=address,
            state=IntentState(state),
            **times,
            **fields,
        )
        return _stored(intent)


def refund(
    app: Flask, email: str, operation_id: str, *, amount: str = "0.1", **fields: object
) -> int:
    """A refund in BTC of `operation_id` the user `email` asked for (the operation's first,
    unless `fields` gives its `number`), its claim link waiting for the customer's address;
    `fields` sets the rest (token_hash, token_encrypted...)."""
    from portal.database import utcnow
    from portal.identity.rules.accounts import find_user
    from portal.money.models import Refund, RefundStage

    with app.app_context():
        asker = find_user(email)
        return _stored(
            Refund(
                merchant_id=asker.merchant_id,
                operation_id=operation_id,
                user_id=asker.id,
                currency="BTC",
                amount=Decimal(amount),
                stage=RefundStage.REQUESTED,
                expires_at=utcnow() + timedelta(days=14),
                **{"number": 1, **fields},
            )
        )


def book_address(app: Flask, currency: str, address: str, *, merchant: str = MERCHANT) -> int:
    """`address` in the merchant's address book, usable at once, as its first owner added it:
    stored without the audit entry and the owners' mail of `address_book.add`, which its own
    tests check (tests/money/test_address_book.py)."""
    from portal.database import utcnow
    from portal.identity.models import Role
    from portal.identity.rules import accounts
    from portal.money.models import BookAddress

    with app.app_context():
        owners = accounts.merchant_named(merchant).users
        owner = next(u for u in owners if u.role is Role.OWNER)
        now = utcnow()
        return _stored(
            BookAddress(
                merchant_id=owner.merchant_id,
                currency=currency,
                address=address,
                name=f"{currency} {address[:8]}",
                added_by_id=owner.id,
                created_at=now,
                usable_from=now,
            )
        )


def webhook_endpoint(
    app: Flask,
    url: str,
    *,
    merchant: str = MERCHANT,
    event_types: tuple[str, ...] = ("operation.confirmed",),
    since_event_id: int | None = None,
) -> int:
    """The merchant's webhooks pointed at `url` for `event_types`, saved as the settings page
    saves them (with a new signing secret). `since_event_id=0` sends the events written
    before, which a save from the page never does."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.rules import webhooks

    with app.app_context():
        endpoint = webhooks.save_endpoint(
            accounts.merchant_named(merchant, create=True), url, list(event_types)
        )
        if since_event_id is not None:
            endpoint.since_event_id = since_event_id
            db.session.commit()
        return endpoint.id


def mail_message(
    app: Flask, to_address: str = "person@acme.test", *, subject: str = "Hi", body: str = "x"
) -> int:
    """A message waiting in the outbox, as the portal queues one."""
    from portal.live.models import MailMessage

    with app.app_context():
        return _stored(MailMessage(to_address=to_address, subject=subject, body=body))


def audit_event(
    app: Flask, action: str, *, email: str | None = None, parameters: dict | None = None
) -> int:
    """An event of the audit log, by the user `email` (or by nobody, as the worker's)."""
    [made] = audit_events(app, action, [parameters or {}], email=email)
    return made


def audit_events(
    app: Flask, action: str, parameters: Iterable[dict], *, email: str | None = None
) -> list[int]:
    """An event of the audit log for each of `parameters`, in order, by the user `email` (or by
    nobody), written in one transaction (a list's pages need a hundred events)."""
    from portal.extensions import db
    from portal.identity.rules import audit
    from portal.identity.rules.accounts import find_user

    with app.app_context():
        by = find_user(email) if email else None
        events = [audit.new_event(action, parameters=each, user=by) for each in parameters]
        db.session.add_all(events)
        db.session.flush()
        made = [event.id for event in events]
        db.session.commit()
        return made

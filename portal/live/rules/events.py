"""The events table: each change the mirror sees, written once, in the order it was seen.

Webhooks, e-mail and the operation page's timeline all read events from here and nowhere else,
and only those of the merchant's current API connection (`of_current_connection`): a new
connection starts a new mirror, and the events of another account are no news about this one.
"""

from __future__ import annotations

import enum
import secrets
from collections.abc import Container
from datetime import datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from portal.extensions import db
from portal.live.models import Event
from portal.payments.rules.operation_money import OperationMoney
from portal.settings.models import ApiConnection


class EventType(enum.StrEnum):
    """What happened. The names are the webhook `type`s a shop receives."""

    OPERATION_CREATED = "operation.created"
    OPERATION_PARTLY_PAID = "operation.partly_paid"  # money arrived, less than due
    OPERATION_PAID = "operation.paid"  # the whole amount arrived, not confirmed yet
    OPERATION_OVERPAID = "operation.overpaid"  # more than due arrived, whatever the status
    OPERATION_UNDERPAID = "operation.underpaid"  # confirmed with less than due (a link, accepted)
    OPERATION_PAID_LATE = "operation.paid_late"  # money reached it after it ended
    OPERATION_CONFIRMED = "operation.confirmed"
    OPERATION_EXPIRED = "operation.expired"
    OPERATION_CANCELED = "operation.canceled"
    OPERATION_FAILED = "operation.failed"
    OPERATION_STATUS_CHANGED = "operation.status_changed"  # to any other status
    TRANSACTION_RECEIVED = "transaction.received"
    TRANSACTION_NEEDS_REVIEW = "transaction.needs_review"  # arrived and nobody decided yet
    TRANSACTION_LINKED = "transaction.linked"
    TRANSACTION_CONFIRMED = "transaction.confirmed"
    TRANSACTION_REJECTED = "transaction.rejected"
    REFUND_REQUESTED = "refund.requested"  # a claim link made, or an address typed
    REFUND_CLAIMED = "refund.claimed"  # the customer gave the address
    REFUND_SENT = "refund.sent"
    REFUND_REFUSED = "refund.refused"  # the payment service refused the withdrawal
    REFUND_UNKNOWN = "refund.outcome_unknown"  # sent, no answer: never sent again
    REFUND_CANCELED = "refund.canceled"
    REFUND_EXPIRED = "refund.expired"  # the link was not claimed in time


# Where a refund stands, as `refund.*` events carry it (`money.rules.refunds.state_of`).
REFUND_STATES = (
    "requested",
    "awaiting_approval",
    "claimed",
    "sent",
    "refused",
    "outcome_unknown",
    "canceled",
    "expired",
)


def public_event_id() -> str:
    """The id a shop sees: random, so it tells nothing about other merchants' volume."""
    return "evt_" + secrets.token_hex(12)


# The key beside the API's record, in an operation event's `data`, that holds the portal's reading
# of the operation's money when the event was written (`with_money`); webhooks send it as the
# body's top-level `portal`. The API's records have no such field.
PORTAL = "portal"
PORTAL_FIELDS = ("state", "due", "received", "awaiting", "difference")


def with_money(record: dict[str, Any], money: OperationMoney | None) -> dict[str, Any]:
    """An operation event's `data`: the API's record and, under `PORTAL`, its money as one state
    and decimal strings (null when unknown, or when the record had no money to read)."""
    figures: dict[str, str | None] = dict.fromkeys(PORTAL_FIELDS)
    if money is not None:
        figures = {
            "state": money.state.value if money.state else None,
            "due": _decimal_text(money.due),
            "received": _decimal_text(money.received),
            "awaiting": _decimal_text(money.awaiting),
            "difference": _decimal_text(money.difference),
        }
    return {**record, PORTAL: figures}


def split_money(data: object) -> tuple[object, dict[str, Any]]:
    """An event's `data` as the API's record and the portal's figures (`with_money`); an event
    written before operations carried them has every figure null."""
    if isinstance(data, dict) and isinstance(data.get(PORTAL), dict):
        record = {name: value for name, value in data.items() if name != PORTAL}
        return record, {name: data[PORTAL].get(name) for name in PORTAL_FIELDS}
    return data, dict.fromkeys(PORTAL_FIELDS)


def _decimal_text(amount: Decimal | None) -> str | None:
    return None if amount is None else format(amount, "f")


# Dedup keys asked for in one query (a first sync's page writes several hundred events).
KEYS_PER_QUERY = 500


def of_current_connection() -> sa.ColumnElement[bool]:
    """The events of their merchant's current connection (generation 0 while there is none)."""
    generation = (
        sa.select(ApiConnection.generation)
        .where(ApiConnection.merchant_id == Event.merchant_id)
        .scalar_subquery()
    )
    return Event.connection_generation == sa.func.coalesce(generation, 0)


def current_generation(merchant_id: int) -> int:
    """The generation of the merchant's connection; 0 while it has none."""
    generation = db.session.scalar(
        sa.select(ApiConnection.generation).where(ApiConnection.merchant_id == merchant_id)
    )
    return generation or 0


def stored_key(generation: int, key: str) -> str:
    """The dedup key as stored: it begins with the connection's `generation` (`unrecorded`)."""
    return f"{generation}:{key}"


def unrecorded(
    merchant_id: int, generation: int, candidates: list[dict], *, unseen: Container[str] = ()
) -> list[dict]:
    """Of these events (the Event columns but the merchant, the connection and the public id),
    the ones the table does not hold yet, in the order given, ready to insert. `dedup_key`
    names the change (subject, what changed, to what): the same change seen by two syncs is one
    event. Stored, it begins with the connection's `generation`: the same change of another
    account is another event. `unseen`: keys the caller knows no event holds (the changes of
    records the mirror did not hold), not looked up (most of a first sync's events)."""
    stored = [stored_key(generation, candidate["dedup_key"]) for candidate in candidates]
    keys = [
        key
        for candidate, key in zip(candidates, stored, strict=True)
        if candidate["dedup_key"] not in unseen
    ]
    known: set[str] = set()
    for start in range(0, len(keys), KEYS_PER_QUERY):
        known.update(
            db.session.scalars(
                sa.select(Event.dedup_key).where(
                    Event.merchant_id == merchant_id,
                    Event.dedup_key.in_(keys[start : start + KEYS_PER_QUERY]),
                )
            )
        )
    return [
        candidate
        | {
            "dedup_key": key,
            "merchant_id": merchant_id,
            "connection_generation": generation,
            "public_id": public_event_id(),
        }
        for candidate, key in zip(candidates, stored, strict=True)
        if key not in known
    ]


def record(
    merchant_id: int,
    type_: EventType,
    *,
    dedup_key: str,
    data: dict,
    occurred_at: datetime,
    operation_id: str | None = None,
    transaction_id: str | None = None,
    notify: bool = True,
) -> bool:
    """Add one event of the merchant's current connection to the session unless its change is
    recorded already (`unrecorded`); whether it was new. The caller commits."""
    candidate = {
        "type": type_.value,
        "dedup_key": dedup_key,
        "data": data,
        "occurred_at": occurred_at,
        "operation_id": operation_id,
        "transaction_id": transaction_id,
        "notify": notify,
    }
    rows = unrecorded(merchant_id, current_generation(merchant_id), [candidate])
    db.session.add_all(Event(**row) for row in rows)
    return bool(rows)

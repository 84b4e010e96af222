"""An operation's timeline: its events from the mirror, in the order they happened.

Each event keeps the API's record as it was at that moment (`Event.data`); an entry takes from
it what a person reads in one line: the amount, the transaction, the reason, the new status.
The record is read field by field and tolerantly: a field the API left out makes the line
shorter, never the page fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation

import sqlalchemy as sa

from portal.api import Operation
from portal.api.records import parse_record
from portal.api.wire import MalformedAnswer
from portal.extensions import db
from portal.live.models import Event
from portal.live.rules.events import of_current_connection, split_money
from portal.payments.models import MirroredOperation
from portal.payments.rules.operation_money import amount_due
from portal.payments.rules.state_words import EVENT_STATES

# Events about the operation whose record says what was paid against what was due: those
# that announce a state.
PAYMENT_EVENTS = frozenset(EVENT_STATES)


@dataclass(frozen=True)
class Entry:
    """One line of the timeline. `type` is the event's name (an `EventType` value, or a name
    this portal does not know yet); `amount` is in `currency`."""

    type: str
    at: datetime
    amount: Decimal | None = None
    currency: str | None = None
    transaction_id: str | None = None
    status: str | None = None
    reason: str | None = None
    due: Decimal | None = None  # what the operation asked for, in `currency`
    state: str | None = None  # the operation's state at the event (`portal.state`), if written


@dataclass(frozen=True)
class Timeline:
    """The entries, oldest first, and the API's `updated_at` of the operation as mirrored."""

    entries: list[Entry]
    mirrored_until: datetime | None

    def behind(self, updated_at: datetime) -> bool:
        """Whether the mirror has the operation but not yet as the API shows it now."""
        return self.mirrored_until is not None and self.mirrored_until < updated_at


def timeline(merchant_id: int, operation_id: str) -> Timeline:
    """The events of one operation of this merchant, oldest first (ties in the order seen)."""
    mirrored = db.session.execute(
        sa.select(
            MirroredOperation.currency,
            MirroredOperation.currency_paid,
            MirroredOperation.updated_at,
        ).where(
            MirroredOperation.merchant_id == merchant_id,
            MirroredOperation.operation_id == operation_id,
        )
    ).first()
    events = db.session.scalars(
        sa.select(Event)
        .where(
            Event.merchant_id == merchant_id,
            Event.operation_id == operation_id,
            of_current_connection(),  # another account's operation of the same id is another story
        )
        .order_by(Event.occurred_at, Event.id)
    ).all()
    paid_in = mirrored.currency_paid if mirrored else None
    entries = [_entry(event, paid_in) for event in events]
    return Timeline(entries, mirrored.updated_at if mirrored else None)


def _entry(event: Event, paid_in: str | None) -> Entry:
    """The line of one event; a transaction's amount is in the operation's payment currency."""
    data = event.data if isinstance(event.data, dict) else {}
    if event.type.startswith("transaction."):
        return Entry(
            event.type,
            event.occurred_at,
            record_amount(data.get("amount")),
            paid_in,
            transaction_id=_text(data.get("id")) or event.transaction_id,
            status=_text(data.get("status")),
            reason=_text(data.get("reject_reason")),
        )
    if event.type in PAYMENT_EVENTS:
        return Entry(
            event.type,
            event.occurred_at,
            record_amount(data.get("amount_paid")),
            _text(data.get("currency_paid")) or paid_in,
            status=_text(data.get("status")),
            due=_due(data),
            state=_text(split_money(data)[1]["state"]),
        )
    return Entry(
        event.type,
        event.occurred_at,
        record_amount(data.get("amount")),
        _text(data.get("currency")),
        status=_text(data.get("status")),
    )


def _due(data: dict) -> Decimal | None:
    """The amount due of the operation's record (None when the record lacks what it takes)."""
    try:
        return amount_due(parse_record(Operation, data))
    except MalformedAnswer:
        return None


def record_amount(value: object) -> Decimal | None:
    """An amount of a stored record (a string in the API's JSON), or None if absent or not a
    finite number: events keep records as they came, so a field may hold anything."""
    if value is None or isinstance(value, bool | float):
        return None
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return None
    return amount if amount.is_finite() else None


def _text(value: object) -> str | None:
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else None

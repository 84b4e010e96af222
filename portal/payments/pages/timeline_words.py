"""The words of an operation's timeline: one plain sentence per event
(`portal.payments.rules.timeline`).

Sentences are plain text, escaped by the template like everything else from the API (a
transaction id or a reject reason may hold anything).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from portal.live.rules.events import EventType
from portal.payments.rules.timeline import Entry, Timeline
from portal.web.formatting import money

FIXED = {
    EventType.OPERATION_EXPIRED: "The operation expired",
    EventType.OPERATION_CANCELED: "The operation was canceled",
    EventType.OPERATION_FAILED: "The operation failed",
}
# Payment events whose record lacks `amount_paid`: said without the amount.
PAID_WORDS = {
    EventType.OPERATION_PARTLY_PAID: "Paid in part",
    EventType.OPERATION_PAID: "Paid in full, not confirmed yet",
    EventType.OPERATION_OVERPAID: "Overpaid",
}
TRANSACTION_WORDS = {
    EventType.TRANSACTION_RECEIVED: "received",
    EventType.TRANSACTION_NEEDS_REVIEW: "needs a decision: link or reject it",
    EventType.TRANSACTION_LINKED: "linked to the operation",
    EventType.TRANSACTION_CONFIRMED: "confirmed on the blockchain",
    EventType.TRANSACTION_REJECTED: "rejected",
}


@dataclass(frozen=True)
class Line:
    at: datetime
    type: str
    text: str


def lines(timeline: Timeline) -> list[Line]:
    return [Line(entry.at, entry.type, sentence(entry)) for entry in timeline.entries]


def sentence(entry: Entry) -> str:
    """What happened, with the amount where the event has one."""
    amount = money(entry.amount, entry.currency) if entry.amount is not None else None
    due = money(entry.due, entry.currency) if entry.due is not None else None
    if entry.type in TRANSACTION_WORDS:
        told = f"Transaction {entry.transaction_id or ''}".rstrip()
        told += f" of {amount}" if amount else ""
        told += f" {TRANSACTION_WORDS[EventType(entry.type)]}"
        if entry.type == EventType.TRANSACTION_REJECTED and entry.reason:
            told += f": “{entry.reason}”"
        return told + "."
    if amount is None and entry.type in PAID_WORDS:
        return f"{PAID_WORDS[EventType(entry.type)]}."
    match entry.type:
        case EventType.OPERATION_CREATED:
            return f"Operation created for {amount}." if amount else "Operation created."
        case EventType.OPERATION_PARTLY_PAID:
            return f"Paid in part: {amount} of {due} due." if due else f"Paid in part: {amount}."
        case EventType.OPERATION_PAID:
            return f"Paid in full: {amount}; not confirmed yet."
        case EventType.OPERATION_OVERPAID:
            return f"Overpaid: {amount} received, {due} due." if due else f"Overpaid: {amount}."
        case EventType.OPERATION_CONFIRMED:
            return f"Confirmed, {amount} paid." if amount else "Confirmed."
        case EventType.OPERATION_STATUS_CHANGED:
            return f"Status changed to {entry.status or 'unknown'}."
    if entry.type in FIXED:
        paid = f", after {amount} had arrived" if amount and entry.amount else ""
        return f"{FIXED[EventType(entry.type)]}{paid}."
    return f"{entry.type}."

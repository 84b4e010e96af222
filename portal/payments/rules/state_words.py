"""The words of an operation's states, written once: the badges of the lists, the operation page
and the dashboard, the timeline's lines, the mails, the exports and the customer's page say these.

An operation's state is what its money amounts to (`portal.payments.rules.operation_money`); the
events of the mirror that announce a state (`EVENT_STATES`) are worded by it: the mail about
`operation.underpaid` is headed "Underpaid", as the badge and the timeline say.
"""

from __future__ import annotations

from portal.live.rules.events import EventType
from portal.payments.rules.operation_money import State

STATE_WORDS = {
    State.PAID_LATE: "Paid late",
    State.UNDERPAID: "Underpaid",
    State.OVERPAID: "Overpaid",
    State.PAID: "Paid",
    State.PAID_UNCONFIRMED: "Paid, not confirmed",
    State.PARTLY_PAID: "Partly paid",
    State.AWAITING_DECISION: "Awaiting a decision",
    State.AWAITING_PAYMENT: "Awaiting payment",
    State.EXPIRED: "Expired",
    State.CANCELED: "Canceled",
    State.FAILED: "Failed",
    State.SENT: "Sent",
    State.REFUNDED: "Refunded",
    State.PARTLY_REFUNDED: "Partly refunded",
}
# The API's own statuses, for a record that has no money state (and a status this portal does
# not know yet, shown as the API wrote it).
STATUS_WORDS = {
    "new": "New",
    "confirmed": "Confirmed",
    "failed": "Failed",
    "expired": "Expired",
    "canceled": "Canceled",
    "processed": "Processed",
}
# The state each event announces: the mirror writes the event when the operation reaches it.
EVENT_STATES: dict[EventType, State] = {
    EventType.OPERATION_PARTLY_PAID: State.PARTLY_PAID,
    EventType.OPERATION_PAID: State.PAID_UNCONFIRMED,
    EventType.OPERATION_OVERPAID: State.OVERPAID,
    EventType.OPERATION_UNDERPAID: State.UNDERPAID,
    EventType.OPERATION_PAID_LATE: State.PAID_LATE,
    EventType.OPERATION_CONFIRMED: State.PAID,
    EventType.OPERATION_EXPIRED: State.EXPIRED,
    EventType.OPERATION_CANCELED: State.CANCELED,
    EventType.OPERATION_FAILED: State.FAILED,
}
# What happened to a transaction, after "Transaction": in a mail's headline and a timeline line.
TRANSACTION_EVENT_WORDS = {
    EventType.TRANSACTION_RECEIVED: "received",
    EventType.TRANSACTION_NEEDS_REVIEW: "needs a decision",
    EventType.TRANSACTION_LINKED: "linked",
    EventType.TRANSACTION_CONFIRMED: "confirmed",
    EventType.TRANSACTION_REJECTED: "rejected",
}


def state_words(state: State | str | None, status: str | None = None) -> str:
    """The state in words; without a state (a status this portal does not know, or a record
    that has no money), the status as its badge says it, or as the API wrote it."""
    if state:
        try:
            return STATE_WORDS[State(state)]
        except ValueError:  # a state a newer portal wrote
            return str(state)
    return STATUS_WORDS.get(status or "", status or "unknown")


def event_state_words(type_name: str) -> str | None:
    """The words of the state an event announces; None for an event that announces none."""
    try:
        return STATE_WORDS[EVENT_STATES[EventType(type_name)]]
    except (ValueError, KeyError):  # a type this portal does not know, or no state's
        return None

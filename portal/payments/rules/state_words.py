"""The words of an operation's states, written once: the badges of the lists, the operation page
and the dashboard, the timeline's lines, the mails and the webhook documentation say these.

An operation's state is its API status, or, for a `new` operation that money already reached,
how far it is paid (`portal.payments.rules.progress`). The events of the mirror that announce a
state (`EVENT_STATES`) are worded by it: the mail about `operation.partly_paid` is headed
"Partly paid", as the badge and the timeline say.
"""

from __future__ import annotations

from portal.live.rules.events import EventType
from portal.payments.rules.progress import Progress

STATUS_WORDS = {
    "new": "New",
    "confirmed": "Confirmed",
    "failed": "Failed",
    "expired": "Expired",
    "canceled": "Canceled",
    "processed": "Processed",
}
PROGRESS_WORDS = {
    Progress.PARTLY_PAID: "Partly paid",
    Progress.PAID: "Paid, not confirmed yet",
    Progress.OVERPAID: "Overpaid",
}
# The state each event announces: the mirror writes the event when the operation reaches it.
EVENT_STATES: dict[EventType, str] = {
    EventType.OPERATION_PARTLY_PAID: Progress.PARTLY_PAID,
    EventType.OPERATION_PAID: Progress.PAID,
    EventType.OPERATION_OVERPAID: Progress.OVERPAID,
    EventType.OPERATION_CONFIRMED: "confirmed",
    EventType.OPERATION_EXPIRED: "expired",
    EventType.OPERATION_CANCELED: "canceled",
    EventType.OPERATION_FAILED: "failed",
}
# What happened to a transaction, after "Transaction": in a mail's headline and a timeline line.
TRANSACTION_EVENT_WORDS = {
    EventType.TRANSACTION_RECEIVED: "received",
    EventType.TRANSACTION_NEEDS_REVIEW: "needs a decision",
    EventType.TRANSACTION_LINKED: "linked",
    EventType.TRANSACTION_CONFIRMED: "confirmed",
    EventType.TRANSACTION_REJECTED: "rejected",
}


def state_words(status: str | None, progress: Progress | None = None) -> str:
    """The state in words: the progress of a `new` operation that money reached, else its
    status; a status the portal does not know, as the API wrote it."""
    if progress is not None:
        return PROGRESS_WORDS[progress]
    return STATUS_WORDS.get(status or "", status or "unknown")


def event_state_words(type_name: str) -> str | None:
    """The words of the state an event announces; None for an event that announces none."""
    try:
        state = EVENT_STATES[EventType(type_name)]
    except (ValueError, KeyError):  # a type this portal does not know, or no state's
        return None
    return PROGRESS_WORDS[state] if isinstance(state, Progress) else STATUS_WORDS[state]

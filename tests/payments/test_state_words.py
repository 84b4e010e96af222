"""Every state of an operation is said in one wording: its badge on the pages, the line of its
timeline, the mail about it and the webhook documentation say the same words."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from portal.live.models import Event
from portal.live.rules.event_words import HEADLINES, describe
from portal.live.rules.events import EventType
from portal.payments.pages.state_badges import state_badge
from portal.payments.pages.timeline_words import sentence
from portal.payments.rules.operation_money import State
from portal.payments.rules.timeline import Entry

AT = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
# Each state of an operation (what its money amounts to) in the words a merchant reads, the
# API's status it comes with here, and the event that tells of it.
STATES = [
    (State.AWAITING_PAYMENT, "new", "Awaiting payment", EventType.OPERATION_CREATED),
    (State.PARTLY_PAID, "new", "Partly paid", EventType.OPERATION_PARTLY_PAID),
    (State.PAID_UNCONFIRMED, "new", "Paid, not confirmed", EventType.OPERATION_PAID),
    (State.OVERPAID, "new", "Overpaid", EventType.OPERATION_OVERPAID),
    (State.UNDERPAID, "confirmed", "Underpaid", EventType.OPERATION_UNDERPAID),
    (State.PAID_LATE, "confirmed", "Paid late", EventType.OPERATION_PAID_LATE),
    (State.PAID, "confirmed", "Paid", EventType.OPERATION_CONFIRMED),
    (State.EXPIRED, "expired", "Expired", EventType.OPERATION_EXPIRED),
    (State.CANCELED, "canceled", "Canceled", EventType.OPERATION_CANCELED),
    (State.FAILED, "failed", "Failed", EventType.OPERATION_FAILED),
    (None, "processed", "Processed", EventType.OPERATION_STATUS_CHANGED),
]
# Events that tell of a state name it first, in the timeline and in the mail's headline.
ANNOUNCING = {event for _, _, _, event in STATES} - {
    EventType.OPERATION_CREATED,
    EventType.OPERATION_STATUS_CHANGED,
}
WEBHOOKS_DOC = Path(__file__).parents[2] / "docs" / "webhooks.md"


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def _mail(event_type: EventType, status: str, state: State | None) -> tuple[str, str]:
    record = {
        "id": "op_1",
        "order_id": "A-1001",
        "amount": "0.5",
        "currency": "BTC",
        "amount_paid": "0.2",
        "currency_paid": "BTC",
        "status": status,
        "portal": {"state": state and state.value},
    }
    event = Event(type=event_type.value, data=record, operation_id="op_1", occurred_at=AT)
    return describe(event, lambda path: f"https://portal.example{path}")


@pytest.mark.parametrize(("state", "status", "words", "event_type"), STATES)
def test_badge_timeline_and_mail_say_a_state_in_the_same_words(state, status, words, event_type):
    assert _text(str(state_badge(state, status))) == words

    subject, body = _mail(event_type, status, state)

    line = sentence(
        Entry(
            type=event_type.value,
            at=AT,
            amount=Decimal("0.2"),
            currency="BTC",
            status=status,
            due=Decimal("0.5"),
            state=state,
        )
    )
    if event_type in ANNOUNCING:
        assert f"\nState: {words}\n" in body
        assert subject.startswith(f"{words} — order A-1001")
        assert line.startswith(words), line
    elif event_type == EventType.OPERATION_STATUS_CHANGED:
        assert line == f"Status changed to {words}."


def test_the_timeline_says_what_an_underpaid_or_late_operation_received():
    underpaid = Entry(
        type=EventType.OPERATION_UNDERPAID.value,
        at=AT,
        amount=Decimal("0.2"),
        currency="BTC",
        due=Decimal("0.5"),
    )
    assert sentence(underpaid) == "Underpaid: 0.2 BTC received, 0.5 BTC due."
    late = Entry(
        type=EventType.OPERATION_PAID_LATE.value, at=AT, amount=Decimal("0.5"), currency="BTC"
    )
    assert sentence(late) == "Paid late: 0.5 BTC received after the operation ended."


def test_a_state_without_its_amounts_is_said_in_its_words_alone():
    for _, _, words, event_type in STATES:
        if event_type in ANNOUNCING:
            assert sentence(Entry(type=event_type.value, at=AT)) == f"{words}."


def test_the_webhook_documentation_names_each_type_as_the_mails_do():
    rows = re.findall(r"^\| `([a-z_.]+)` \|[^|]+\|([^|]*)\|$", WEBHOOKS_DOC.read_text(), re.M)
    documented = {type_name: words.strip() for type_name, words in rows}
    assert documented.pop("test") == ""
    assert documented == {type_.value: HEADLINES[type_] for type_ in EventType}

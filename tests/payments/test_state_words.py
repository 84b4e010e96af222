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
from portal.payments.pages.progress_badges import state_badge
from portal.payments.pages.timeline_words import sentence
from portal.payments.rules.progress import Progress
from portal.payments.rules.timeline import Entry

AT = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
# Each state (API status, and the progress of a `new` operation that money reached) in the
# words a merchant reads, and the event that tells of it.
STATES = [
    ("new", None, "New", EventType.OPERATION_CREATED),
    ("new", Progress.PARTLY_PAID, "Partly paid", EventType.OPERATION_PARTLY_PAID),
    ("new", Progress.PAID, "Paid, not confirmed yet", EventType.OPERATION_PAID),
    ("new", Progress.OVERPAID, "Overpaid", EventType.OPERATION_OVERPAID),
    ("confirmed", None, "Confirmed", EventType.OPERATION_CONFIRMED),
    ("expired", None, "Expired", EventType.OPERATION_EXPIRED),
    ("canceled", None, "Canceled", EventType.OPERATION_CANCELED),
    ("failed", None, "Failed", EventType.OPERATION_FAILED),
    ("processed", None, "Processed", EventType.OPERATION_STATUS_CHANGED),
]
# Events that tell of a state name it first, in the timeline and in the mail's headline.
ANNOUNCING = {event for _, _, _, event in STATES} - {
    EventType.OPERATION_CREATED,
    EventType.OPERATION_STATUS_CHANGED,
}
WEBHOOKS_DOC = Path(__file__).parents[2] / "docs" / "webhooks.md"


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def _mail(event_type: EventType, status: str) -> tuple[str, str]:
    record = {
        "id": "op_1",
        "order_id": "A-1001",
        "amount": "0.5",
        "currency": "BTC",
        "amount_paid": "0.2",
        "currency_paid": "BTC",
        "status": status,
    }
    event = Event(type=event_type.value, data=record, operation_id="op_1", occurred_at=AT)
    return describe(event, lambda path: f"https://portal.example{path}")


@pytest.mark.parametrize(("status", "progress", "words", "event_type"), STATES)
def test_badge_timeline_and_mail_say_a_state_in_the_same_words(status, progress, words, event_type):
    assert _text(str(state_badge(status, progress))) == words

    subject, body = _mail(event_type, status)
    assert f"\nStatus: {words}\n" in body

    line = sentence(
        Entry(
            type=event_type.value,
            at=AT,
            amount=Decimal("0.2"),
            currency="BTC",
            status=status,
            due=Decimal("0.5"),
        )
    )
    if event_type in ANNOUNCING:
        assert subject.startswith(f"{words} — order A-1001")
        assert body.startswith(f"{words}\n")
        assert line.startswith(words), line
        assert HEADLINES[event_type] == words
    elif event_type == EventType.OPERATION_STATUS_CHANGED:
        assert line == f"Status changed to {words}."


def test_a_state_without_its_amounts_is_said_in_its_words_alone():
    for _, _, words, event_type in STATES:
        if event_type in ANNOUNCING:
            assert sentence(Entry(type=event_type.value, at=AT)) == f"{words}."


def test_the_webhook_documentation_names_each_type_as_the_mails_do():
    rows = re.findall(r"^\| `([a-z_.]+)` \|[^|]+\|([^|]*)\|$", WEBHOOKS_DOC.read_text(), re.M)
    documented = {type_name: words.strip() for type_name, words in rows}
    assert documented.pop("test") == ""
    assert documented == {type_.value: HEADLINES[type_] for type_ in EventType}

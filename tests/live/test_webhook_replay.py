"""Replaying a period's events to an endpoint: asked for by an owner with a second factor, rate
limited and audited, carried out by the worker with the events' own ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from portal.extensions import db
from portal.identity.models import AuditEvent
from portal.live.models import Event
from tests.live.test_webhooks import PAGE, configure, deliver, record
from tests.support.forms import PASSWORD, csrf_token


@pytest.fixture
def portal_config(portal_config):
    return portal_config | {"WEBHOOK_REPLAY_LIMIT": "2 per hour"}


def written(app, public_id: str, ago: timedelta) -> None:
    """As if the event had been written `ago`."""
    with app.app_context():
        event = db.session.scalars(sa.select(Event).where(Event.public_id == public_id)).one()
        event.created_at = datetime.now(UTC) - ago
        db.session.commit()


def replay(client, since: int, until: int, password: str = PASSWORD):
    """Ask for the events of `since` to `until` days ago (the owner's zone is UTC)."""
    today = datetime.now(UTC).date()
    data = {
        "replay-since": str(today - timedelta(days=since)),
        "replay-until": str(today - timedelta(days=until)),
        "replay-password": password,
        "csrf_token": csrf_token(client, PAGE),
    }
    return client.post(f"{PAGE}/replay", data=data)


def audited(app) -> list[tuple[dict, str | None]]:
    with app.app_context():
        rows = db.session.scalars(
            sa.select(AuditEvent).where(AuditEvent.action == "webhooks.replay")
        ).all()
        return [(row.parameters, row.error_message) for row in rows]


def test_a_replay_sends_exactly_the_period_s_notified_events_of_the_types_with_their_ids(
    app, owner, shop
):
    before_setup = record(app, "operation.confirmed", "op-a")  # never sent until the replay
    configure(owner, shop.url, "operation.confirmed")
    delivered = record(app, "operation.confirmed", "op-b")
    too_old = record(app, "operation.confirmed", "op-c")
    today = record(app, "operation.confirmed", "op-d")
    quiet = record(app, "operation.confirmed", "op-e", notify=False)
    other_type = record(app, "operation.expired", "op-f")
    deliver(app)
    assert sorted(shop.event_ids()) == sorted([delivered, too_old, today])
    for public_id, days in ((before_setup, 3), (delivered, 2), (quiet, 2), (other_type, 2)):
        written(app, public_id, timedelta(days=days))
    written(app, too_old, timedelta(days=31))

    assert replay(owner, since=40, until=1).status_code == 302
    assert len(shop.requests()) == 3, "the worker sends it, not the owner's request"
    deliver(app)
    replayed = shop.requests()[3:]
    assert sorted(request.event_id for request in replayed) == sorted([before_setup, delivered])
    first = next(request for request in shop.requests() if request.event_id == delivered)
    again = next(request for request in replayed if request.event_id == delivered)
    moved = {"created_at": None}  # the test moved it back in time
    assert again.json | moved == first.json | moved, "the same event, its own id"
    assert "(by hand)" in owner.get(PAGE).get_data(as_text=True)
    deliver(app)
    assert len(shop.requests()) == 5, "carried out once"
    ((parameters, error),) = audited(app)
    assert error is None and set(parameters) == {"endpoint", "from", "to"}


def test_a_replay_needs_the_password_and_is_rate_limited(app, owner, shop):
    configure(owner, shop.url, "operation.confirmed")
    sent = record(app, "operation.confirmed")
    deliver(app)
    written(app, sent, timedelta(days=1))

    refused = replay(owner, since=2, until=0, password="wrong password")
    assert refused.status_code == 422
    deliver(app)
    assert shop.event_ids() == [sent], "nothing replayed"

    assert replay(owner, since=2, until=0).status_code == 302
    assert replay(owner, since=2, until=0).status_code == 302
    limited = replay(owner, since=2, until=0)
    assert limited.status_code == 429
    assert "Too many replays" in limited.get_data(as_text=True)
    deliver(app)
    assert shop.event_ids() == [sent] * 2, "two replays of one event before the worker: once"
    errors = [error for _parameters, error in audited(app)]
    assert len(errors) == 4 and errors.count(None) == 2, "refusals audited with their reasons"

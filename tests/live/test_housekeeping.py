"""The worker's hourly housekeeping forgets what the portal keeps only for a while, so that no
table grows with time alone: the rates read longer ago than PORTAL_RATE_HISTORY_DAYS (a sync
records a row each time they changed: thousands a day per merchant), and the webhook delivery
log and the mail sent of more than 30 days ago (a row per event and endpoint, per event and
person). Events, each operation's timeline, stay."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from tests.support import factories


def rates_kept(app, read_days_ago: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Record rates of Acme begun and last read so many days ago, run the housekeeping, and
    say which (begun, last read) remain."""
    from portal.database import utcnow
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.live.worker import tasks
    from portal.money.models import RateRecord

    now = utcnow()
    with app.app_context():
        merchant_id = merchant_named("Acme").id
        for begun, read in read_days_ago:
            db.session.add(
                RateRecord(
                    merchant_id=merchant_id,
                    connection_generation=1,
                    recorded_at=now - timedelta(days=begun),
                    last_seen_at=now - timedelta(days=read),
                    rates={"BTC:USD": "60000"},
                )
            )
        db.session.commit()
    tasks.housekeeping.call_local()
    with app.app_context():
        kept = db.session.scalars(sa.select(RateRecord).order_by(RateRecord.recorded_at))
        return [((now - r.recorded_at).days, (now - r.last_seen_at).days) for r in kept]


def test_rates_read_longer_ago_than_400_days_are_forgotten(app, accounts, worker_of_this_portal):
    # The rates of 600 days ago that were read again yesterday (they did not change) stay.
    kept = rates_kept(app, [(500, 500), (600, 1), (399, 399), (0, 0)])
    assert kept == [(600, 1), (399, 399), (0, 0)]


def test_the_history_kept_is_a_setting(app, accounts, worker_of_this_portal):
    app.config["RATE_HISTORY_DAYS"] = 30
    assert rates_kept(app, [(399, 399), (29, 29), (0, 0)]) == [(29, 29), (0, 0)]


def _days_ago(days: int):
    from portal.database import utcnow

    return utcnow() - timedelta(days=days)


def _event(merchant_id: int, number: int, days: int):
    from portal.live.models import Event

    return Event(
        public_id=f"evt_{number}",
        merchant_id=merchant_id,
        type="operation.confirmed",
        operation_id=f"op-{number}",
        dedup_key=f"test:{number}",
        data={},
        occurred_at=_days_ago(days),
        created_at=_days_ago(days),
    )


def test_the_delivery_log_older_than_30_days_is_forgotten_but_pending_deliveries_and_events_stay(
    each_database, app, accounts, worker_of_this_portal
):
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.live.models import (
        DeliveryState,
        Event,
        WebhookAttempt,
        WebhookDelivery,
        WebhookReplay,
    )
    from portal.live.worker import tasks

    endpoint_id = factories.webhook_endpoint(app, "https://shop.example/hooks")
    # (state, days since it was last due, days since its attempt)
    deliveries = {
        "delivered long ago": (DeliveryState.DELIVERED, 31, 31),
        "failed long ago": (DeliveryState.FAILED, 40, 40),
        "still pending from long ago": (DeliveryState.PENDING, 45, 45),
        "delivered last week": (DeliveryState.DELIVERED, 7, 7),
    }
    with app.app_context():
        merchant_id = merchant_named("Acme").id
        for number, (name, (state, due, tried)) in enumerate(deliveries.items()):
            event = _event(merchant_id, number, due)
            db.session.add(event)
            db.session.flush()
            delivery = WebhookDelivery(
                endpoint_id=endpoint_id,
                event_id=event.id,
                operation_id=name,
                state=state,
                attempts=1,
                next_attempt_at=_days_ago(due),
                created_at=_days_ago(due),
            )
            db.session.add(delivery)
            db.session.flush()
            db.session.add(
                WebhookAttempt(
                    delivery_id=delivery.id, started_at=_days_ago(tried), status=200, duration_ms=5
                )
            )
        for days in (31, 2):
            db.session.add(
                WebhookReplay(
                    endpoint_id=endpoint_id,
                    period_start=_days_ago(days + 1),
                    period_end=_days_ago(days),
                    requested_at=_days_ago(days),
                    done_at=_days_ago(days),
                )
            )
        db.session.commit()

    tasks.housekeeping.call_local()

    with app.app_context():
        kept = set(db.session.scalars(sa.select(WebhookDelivery.operation_id)))
        assert kept == {"still pending from long ago", "delivered last week"}
        attempts_kept = db.session.scalar(sa.select(sa.func.count()).select_from(WebhookAttempt))
        assert attempts_kept == 1  # the pending one's attempt was 45 days ago: gone too
        replays = db.session.scalars(sa.select(WebhookReplay.done_at)).all()
        assert [(_days_ago(0) - done).days for done in replays] == [2]
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Event)) == 4


def test_mail_sent_or_given_up_more_than_30_days_ago_is_forgotten_queued_mail_stays(
    app, accounts, worker_of_this_portal
):
    from portal.extensions import db
    from portal.live.models import MailMessage, MailState
    from portal.live.worker import tasks

    messages = {
        "sent long ago": (MailState.SENT, 31),
        "given up long ago": (MailState.FAILED, 60),
        "queued long ago": (MailState.QUEUED, 60),
        "sent yesterday": (MailState.SENT, 1),
    }
    with app.app_context():
        for subject, (state, days) in messages.items():
            db.session.add(
                MailMessage(
                    to_address="owner@acme.test",
                    subject=subject,
                    state=state,
                    next_attempt_at=_days_ago(days),
                    created_at=_days_ago(days),
                )
            )
        db.session.commit()

    tasks.housekeeping.call_local()

    with app.app_context():
        kept = set(db.session.scalars(sa.select(MailMessage.subject)))
    assert kept == {"queued long ago", "sent yesterday"}


def test_a_delivery_inside_a_long_retry_window_stays_so_its_event_is_not_sent_again(
    app, accounts, worker_of_this_portal
):
    """The fan-out makes a delivery for each event of the retry window that has none: a
    delivery forgotten inside that window would be made and sent again."""
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.live.models import DeliveryState, WebhookDelivery
    from portal.live.rules import webhooks
    from portal.live.worker import tasks

    app.config["WEBHOOK_RETRY_SECONDS"] = 60 * 86400
    endpoint_id = factories.webhook_endpoint(app, "https://shop.example/hooks", since_event_id=0)
    with app.app_context():
        event = _event(merchant_named("Acme").id, 1, 40)
        db.session.add(event)
        db.session.flush()
        db.session.add(
            WebhookDelivery(
                endpoint_id=endpoint_id,
                event_id=event.id,
                state=DeliveryState.DELIVERED,
                next_attempt_at=_days_ago(40),
                created_at=_days_ago(40),
            )
        )
        db.session.commit()

    tasks.housekeeping.call_local()

    with app.app_context():
        assert webhooks.fan_out() == 0
        states = db.session.scalars(sa.select(WebhookDelivery.state)).all()
    assert states == [DeliveryState.DELIVERED]

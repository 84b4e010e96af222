"""The worker's hourly housekeeping forgets the rates read longer ago than
PORTAL_RATE_HISTORY_DAYS: a sync records a row each time they changed, so the history would
otherwise grow by thousands of rows a day per merchant, for ever."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa


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

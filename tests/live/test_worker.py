"""`flask --app portal worker` as a real process against a real sandbox."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.support.polling import wait_for
from tests.support.portal_app import connected_portal
from tests.support.sandbox_server import run_sandbox
from tests.support.worker import start_worker

SEED = 60


@pytest.fixture
def seeded(tmp_path):
    with run_sandbox(tmp_path / "sandbox.db", seed=SEED, random_seed=5) as server:
        yield server


def mirrored_operations(app) -> int:
    from portal.extensions import db
    from portal.payments.models import MirroredOperation

    with app.app_context():
        return db.session.scalar(sa.select(sa.func.count()).select_from(MirroredOperation))


def state(app):
    from portal.extensions import db
    from portal.live.models import MirrorState

    with app.app_context():
        return db.session.scalars(sa.select(MirrorState)).one()


@pytest.mark.long
@pytest.mark.slow
def test_a_worker_fills_the_mirror_within_seconds_and_stops_on_sigterm(tmp_path, seeded):
    with connected_portal(tmp_path, seeded) as app:
        worker = start_worker(app, tmp_path / "worker")
        try:
            wait_for(lambda: mirrored_operations(app) == SEED, timeout=30)
            wait_for(lambda: "incremental sync done" in worker.output(), timeout=30)
        finally:
            code = worker.stop()
        assert code == 0, worker.output()
        assert "first sync done" in worker.output()
        assert seeded.token not in worker.output()
        assert state(app).lease_owner is None  # a graceful stop leaves no lease to run out

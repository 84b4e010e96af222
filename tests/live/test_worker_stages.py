"""The worker's threads are shared between its stages: a tick starts the mirror's syncs, the
requests sent out (webhook deliveries, refunds) and the mail as tasks of their own, one per
stage, and the syncs never take the threads the others need."""

from __future__ import annotations

import threading

import pytest

from tests.support.polling import wait_for


def test_a_tick_starts_each_stage_as_a_task_of_its_own(app):
    from portal.live.worker import tasks
    from portal.live.worker.queue import huey

    huey.flush()
    tasks.tick.call_local()
    assert sorted(task.name for task in huey.pending()) == ["send_mail", "send_out", "sync_mirror"]
    huey.flush()


def test_a_tick_starts_one_task_per_stage():
    """A stage's task that finds the stage's threads taken returns at once, leaving its work
    to the task under way, which does it only if it is of the same kind. Two kinds of task in
    one stage made a tick's webhooks wait a whole tick whenever its refunds took the thread
    first: no two of a tick's tasks share a stage."""
    from portal.live.worker import tasks

    stages = [task.func.stage for task in tasks.STAGE_TASKS]
    assert len({id(stage) for stage in stages}) == len(stages) == 3


@pytest.fixture
def stages_restored():
    """The stages are the process's own: a consumer made here must not leave its sharing to
    the tests that follow."""
    from portal.live.worker.queue import SYNCS

    slots = SYNCS.slots
    try:
        yield
    finally:
        SYNCS.slots = slots


def test_syncs_leave_a_thread_for_deliveries_and_one_for_mail(app, stages_restored):
    from portal.live.worker.queue import SYNCS, GracefulConsumer, huey

    with pytest.raises(ValueError, match="at least 3 threads"):
        GracefulConsumer(huey, workers=2, worker_type="thread")
    GracefulConsumer(huey, workers=4, worker_type="thread")

    release = threading.Event()
    running: list[str] = []

    @SYNCS
    def sync(name: str) -> str:
        running.append(name)
        release.wait(timeout=10)
        return name

    threads = [threading.Thread(target=sync, args=(f"sync {n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: len(running) == 2, timeout=5)
        assert sync("a third sync") is None, "two syncs at once, of four threads"
    finally:
        release.set()
        for thread in threads:
            thread.join()
    assert sync("later") == "later"


def test_a_delivery_turn_s_escaped_failure_is_logged_by_its_class(app, monkeypatch, caplog):
    """The worker does not wait for its delivery turns: a failure their own handling lets
    through (a rollback failing with the database down) is logged, without its text."""
    from portal.live.rules import webhooks

    def database_down(endpoint_id: int, deadline: float) -> int:
        raise ConnectionError("password=hunter2 in the server's words")

    monkeypatch.setattr(webhooks, "fan_out", lambda: 0)
    monkeypatch.setattr(webhooks, "_endpoints_due", lambda now: [987654])
    monkeypatch.setattr(webhooks, "_deliver_to", database_down)
    with app.app_context():
        assert webhooks.deliver_due(wait=False) == 0
    record = wait_for(
        lambda: next((r for r in caplog.records if r.name == webhooks.__name__), None), timeout=5
    )
    assert record.levelname == "ERROR"
    assert "ConnectionError" in record.getMessage()
    assert "hunter2" not in caplog.text


def test_stopping_the_consumer_stops_every_pass_that_claims_work(app, stages_restored, monkeypatch):
    """SIGTERM or SIGINT stops the consumer: the syncs, the delivery turns and the passes that
    send money all read the one flag it sets, and claim nothing more."""
    from portal import shutdown
    from portal.live.worker.queue import GracefulConsumer, huey

    monkeypatch.setattr(shutdown, "_requested", threading.Event())
    consumer = GracefulConsumer(huey, workers=3, worker_type="thread")
    assert not shutdown.requested()

    consumer.stop()

    assert shutdown.requested()

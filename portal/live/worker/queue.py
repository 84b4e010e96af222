"""The task queue: Huey, on a SQLite file in instance/ by default (no server needed) and on
Redis when workers on several machines share it (`PORTAL_QUEUE_URL=redis://…`).

The queue only carries work; what must happen once is claimed in the portal's database (leases
and conditional updates in the rules), so a task that two workers both run does it once.

The consumer's threads are shared between the stages (`Stage`): the mirror's syncs take all
but two, webhook deliveries one and mail one, so that no stage, however slow its peers, holds
the threads another needs.
"""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask
from huey import Huey
from huey.consumer import Consumer
from huey.storage import MemoryStorage, RedisStorage, SqliteStorage

from portal import shutdown
from portal.live.rules import webhooks

NAME = "portal"
MEMORY = "memory://"
# A graceful stop waits this long for tasks under way (a sync stops after its current page).
SHUTDOWN_SECONDS = 30
# Module level, as Huey's decorators want it; `init_app` gives it the configured storage.
huey = Huey(NAME, results=False, utc=True, storage_class=MemoryStorage)
_application: list[Flask] = []


def init_app(app: Flask) -> None:
    """Point the queue at `PORTAL_QUEUE_URL` (default: instance/queue.sqlite3)."""
    url = app.config.get("QUEUE_URL") or f"sqlite:///{Path(app.instance_path) / 'queue.sqlite3'}"
    # Portals sharing one Redis keep apart by name (`PORTAL_QUEUE_NAME`, default "portal").
    name = str(app.config.get("QUEUE_NAME") or NAME)
    if url.startswith(("redis://", "rediss://", "unix://")):
        huey.storage = RedisStorage(name, url=url)
    elif url.startswith("sqlite:///"):
        huey.storage = SqliteStorage(name, filename=url.removeprefix("sqlite:///"))
    elif url == MEMORY:  # this process alone (the tests' portals, which start no worker)
        huey.storage = MemoryStorage(name)
    else:
        raise ValueError(
            "PORTAL_QUEUE_URL must start with sqlite:///, redis:// or rediss://, or be memory://."
        )
    _application[:] = [app]
    # A test event or a resend asks the worker to deliver at once (the web processes enqueue).
    from portal.live.worker.tasks import send_out  # here: the tasks need the queue

    app.extensions[webhooks.WAKE_EXTENSION] = send_out


def in_app_context(function: Callable[..., Any]) -> Callable[..., Any]:
    """Run a task inside the application the worker was started with (database, config)."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        with _application[0].app_context():
            return function(*args, **kwargs)

    return run


class Stage:
    """One kind of task (syncs, deliveries, mail) and the consumer threads it may hold at once
    in this process. A task that finds them all taken returns at once: the tasks under way, or
    the next tick's, do its work."""

    def __init__(self, threads: int = 1) -> None:
        self.slots = threading.BoundedSemaphore(threads)

    def share(self, threads: int) -> None:
        self.slots = threading.BoundedSemaphore(threads)

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            slots = self.slots  # the one released is the one taken
            if not slots.acquire(blocking=False):
                return None
            try:
                return function(*args, **kwargs)
            finally:
                slots.release()

        run.stage = self  # type: ignore[attr-defined]
        return run


SYNCS, DELIVERIES, MAIL = Stage(), Stage(), Stage()
# A thread for deliveries, one for mail, and at least one for the syncs.
MIN_THREADS = 3


class GracefulConsumer(Consumer):
    """Huey's consumer, stopping gracefully on SIGTERM (what systemd and containers send) and on
    SIGINT (Ctrl+C) alike: tasks under way finish, a sync stops after its current page, a
    delivery turn after its POST under way and a pass that sends money after its send under way
    (`portal.shutdown`), so no lease is left to run out and nothing is left `sending`."""

    def __init__(self, queue: Huey, **options: Any) -> None:
        # An idle thread looks for work at least every second (Huey's default backs off to
        # ten), so a tick starts on time and a stop does not wait for sleeping threads.
        options = {"max_delay": 1.0, **options}
        threads = int(options.get("workers", 1))
        if threads < MIN_THREADS:
            raise ValueError(f"The worker needs at least {MIN_THREADS} threads, one per stage.")
        SYNCS.share(threads - 2)
        super().__init__(
            queue, graceful_signal="TERM", shutdown_timeout=SHUTDOWN_SECONDS, **options
        )
        self._signal_actions[signal.SIGINT] = (False, True)  # (restart, graceful)

    def stop(self, graceful: bool = False) -> None:
        shutdown.request()
        super().stop(graceful=graceful)

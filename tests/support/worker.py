"""`flask --app portal worker` as a real process, for a portal application of the tests.

The process gets the application's configuration as `PORTAL_*` variables (its database, its
token keys to read the stored API tokens) and a queue of its own, so tests running in parallel
never share one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask

from tests.support.polling import wait_for
from tests.support.processes import PythonProcess, start_python

ROOT = Path(__file__).resolve().parents[2]
STARTED = "Huey consumer started"


@dataclass
class WorkerProcess:
    """A running worker and the file its log goes to."""

    process: PythonProcess
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, *, kill: bool = False, timeout: float = 30.0) -> int:
        """SIGTERM (a graceful stop: tasks under way finish) or SIGKILL (a crash); the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


def worker_environment(
    app: Flask, folder: Path, *, queue_url: str | None = None, sync_seconds: int = 1
) -> dict[str, str]:
    """The `PORTAL_*` variables that make a process the same portal as `app`; on a shared
    Redis its queue is named after the portal's database, so another test's workers (same
    database: same portal) share it and no one else does."""
    config = app.config
    digest = hashlib.sha256(config["DATABASE_URL"].encode()).hexdigest()
    keys = ",".join(k.decode() if isinstance(k, bytes) else k for k in config["TOKEN_KEYS"])
    return {
        **os.environ,
        "PORTAL_INSTANCE_PATH": str(folder),
        "PORTAL_SECRET_KEY": config["SECRET_KEY"],
        "PORTAL_TOKEN_KEYS": keys,
        "PORTAL_DATABASE_URL": config["DATABASE_URL"],
        "PORTAL_QUEUE_URL": queue_url or f"sqlite:///{folder / 'queue.sqlite3'}",
        "PORTAL_QUEUE_NAME": f"portal-test-{digest[:16]}",
        "PORTAL_SYNC_SECONDS": str(sync_seconds),
        "PORTAL_API_TIMEOUT_READ": "5",
    }


def portal_process(config: Mapping[str, Any], script: str, **settings: str) -> PythonProcess:
    """A Python process running `script` as the same portal as the test configuration `config`
    (its database, secret key and token keys), with `PORTAL_<NAME>` for each of `settings`."""
    environment = {
        **os.environ,
        "PORTAL_DATABASE_URL": config["DATABASE_URL"],
        "PORTAL_SECRET_KEY": config["SECRET_KEY"],
        "PORTAL_TOKEN_KEYS": config["TOKEN_KEYS"],
        **{f"PORTAL_{name}": value for name, value in settings.items()},
    }
    return start_python(["-c", script], env=environment, cwd=ROOT)


def start_worker(
    app: Flask,
    folder: Path,
    *,
    queue_url: str | None = None,
    sync_seconds: int = 1,
    name: str = "worker",
    timeout: float = 60.0,
) -> WorkerProcess:
    """Start a worker for `app` (instance folder, log and default queue in `folder`) and wait
    until its consumer runs."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"{name}.log"
    process = start_python(
        ["-m", "flask", "--app", "portal", "worker"],
        env=worker_environment(app, folder, queue_url=queue_url, sync_seconds=sync_seconds),
        cwd=ROOT,
        output=log,
    )
    worker = WorkerProcess(process, log)

    def started() -> bool:
        assert process.poll() is None, f"the worker exited:\n{worker.output()}"
        return STARTED in worker.output()

    wait_for(started, timeout=timeout)
    return worker


@contextlib.contextmanager
def running_worker(app: Flask, folder: Path, **options: object) -> Iterator[WorkerProcess]:
    """A worker for the time of the block, stopped with SIGTERM at its end."""
    worker = start_worker(app, folder, **options)  # type: ignore[arg-type]
    try:
        yield worker
    finally:
        worker.stop()

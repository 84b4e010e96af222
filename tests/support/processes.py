"""`python -m <module>` and `python -c <script>` as real processes that start without importing
anything: each is forked from a server process (multiprocessing's forkserver, one per pytest
worker) that has imported the portal, the sandbox and their libraries once.

A portal served by `flask run` starts in 0.08 CPU-s instead of 0.76, a sandbox in 0.04
instead of 0.14; the suite starts about 130 of them. The process runs the module as `python -m`
does (runpy, as `__main__`, with its own arguments, environment and working folder), in a
process of its own with its own pid and signals. The commands whose start is what a test is
about (`flask` subcommands run by `subprocess.run`, `--print-config`) still start a fresh
interpreter.
"""

from __future__ import annotations

import multiprocessing
import os
import pkgutil
import runpy
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import portal
import sandbox

# What the processes import: the target below (which the forked process must find), every
# module of the portal and the sandbox (a feature's pages are imported as an application is
# made), and the libraries of the servers and stores they use. `wsgi` is not among them:
# importing it builds an application from the server's environment.
PRELOADED = [
    __name__,
    *(
        module.name
        for package in (portal, sandbox)
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
        if not module.name.endswith(".__main__")  # run by runpy, not imported
    ),
    "flask.cli",
    "werkzeug.serving",
    "gunicorn.app.wsgiapp",
    "gunicorn.arbiter",
    "psycopg",
    "sqlalchemy.dialects.postgresql.psycopg",
    "redis",
]

_FORKSERVER = multiprocessing.get_context("forkserver")
_FORKSERVER.set_forkserver_preload(PRELOADED)


class PythonProcess:
    """The part of `subprocess.Popen`'s interface the tests use, for a forked process."""

    def __init__(self, args: Sequence[str], process: multiprocessing.process.BaseProcess) -> None:
        self.args = list(args)
        self._process = process

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        """The exit code, or minus the signal that ended it; None while it runs."""
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self._process.exitcode

    def send_signal(self, number: int) -> None:
        if self.poll() is None:  # once it is reaped, its pid may be somebody else's
            os.kill(self.pid, number)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def start_python(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    output: Path | None = None,
    quiet: bool = False,
) -> PythonProcess:
    """Start `python <args>` (`-m module …` or `-c script …`) with `env` as its whole
    environment, in `cwd`; its standard output and error appended to `output`, or its
    standard output discarded if `quiet` (errors still reach the test's)."""
    if args[0] not in ("-m", "-c"):
        raise ValueError(f"python {args[0]}: only -m and -c are served")
    if output is not None:
        output.touch()  # there from the start, as a file a shell would redirect to
    process = _FORKSERVER.Process(
        target=_run, args=(list(args), dict(env), str(cwd), output, quiet), daemon=True
    )
    process.start()
    return PythonProcess([sys.executable, *args], process)


def _run(args: list[str], env: dict[str, str], cwd: str, output: Path | None, quiet: bool) -> None:
    """In the forked process: become `python <args>`."""
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    if output is not None or quiet:
        target = os.open(output or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(target, 1)
        if output is not None:
            os.dup2(target, 2)
        os.close(target)
    sys.stdout.reconfigure(line_buffering=True, write_through=True)  # as PYTHONUNBUFFERED
    sys.path.insert(0, cwd)  # as `python -m` and `-c` put the working folder first
    if args[0] == "-m":
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = ["-c", *args[2:]]
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102

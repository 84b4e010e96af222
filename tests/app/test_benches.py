"""The benches as the performance page runs them (`bench/all.py`)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    """A port of loopback nothing listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_run_meant_for_postgresql_stops_at_once_when_it_cannot_reach_it():
    """With PORTAL_TEST_DATABASE_URL set, a run of every bench measures PostgreSQL too: when
    that server is down, no bench runs and the run fails, rather than printing figures of
    SQLite alone as if PostgreSQL had been measured (or skipped)."""
    environment = {
        **os.environ,
        "PORTAL_TEST_DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:{closed_port()}/x",
    }
    finished = subprocess.run(
        [sys.executable, "bench/all.py", "--only", "page_cost.py"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert finished.returncode != 0
    assert "PostgreSQL cannot be reached" in finished.stderr
    assert "Connection refused" in finished.stderr
    assert "===" not in finished.stdout, "a bench ran"


def _load_in_new_python(preamble: str, paths: list[Path], run_name: str) -> None:
    loads = "; ".join(f"runpy.run_path({str(path)!r}, run_name={run_name!r})" for path in paths)
    finished = subprocess.run(
        [sys.executable, "-c", f"import runpy; {preamble}; {loads}"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]


@pytest.mark.slow  # a Python process of its own, which imports locust
def test_every_bench_imports():
    """A bench that no longer imports fails the run of them all (`bench/all.py`) halfway: each
    module is loaded as a script would load it, without running it."""
    # locust (bench/load_users.py) patches the standard library as it is imported, which must
    # happen before anything imports ssl: it is loaded first, as the load test loads it.
    benches = sorted((ROOT / "bench").glob("*.py"), key=lambda path: path.name != "load_users.py")
    _load_in_new_python("pass", benches, run_name="imported")


@pytest.mark.slow  # a Python process of its own, which imports the portal and the sandbox
def test_every_bench_can_be_imported_where_its_servers_are_forked():
    """The servers a bench starts are forked from a server process that has imported the
    portal, the sandbox and their libraries (ssl among them), and that imports the bench's
    script as `__mp_main__` before it runs a server: a script whose imports fail there (as
    locust's did, patching ssl once imported) starts no server at all."""
    scripts = [
        path
        for path in sorted((ROOT / "bench").glob("*.py"))
        if 'if __name__ == "__main__":' in path.read_text()
    ]
    assert any(path.name == "load_test.py" for path in scripts)
    preload = "import importlib; from tests.support.processes import PRELOADED; "
    preload += "[importlib.import_module(name) for name in PRELOADED]"
    _load_in_new_python(preload, scripts, run_name="__mp_main__")


def test_search_statements_times_each_kind_statement_by_statement(
    app, accounts, monkeypatch, capsys
):
    """`bench/search_statements.py` on a database filled already: each kind's median, then the
    statements the search rule ran for it, with their time and how often a search ran them."""
    import runpy

    from tests.support.mirror_rows import mirror_all, operation_record, transaction_record

    mirror_all(app, [operation_record(transactions=[transaction_record()]) for _ in range(30)])
    script = ROOT / "bench" / "search_statements.py"
    arguments = [str(script), "--database-url", app.config["DATABASE_URL"], "--searches", "4"]
    monkeypatch.setattr(sys, "argv", arguments)
    runpy.run_path(str(script), run_name="__main__")
    printed = capsys.readouterr().out
    for kind in ("order number", "operation id", "address", "transaction hash", "transaction id"):
        section = printed.split(f"\n{kind} (e.g. ")[1].split("figure: ")[0]
        assert " ms, p95 " in section.splitlines()[0], printed
        assert " 1 x  SELECT " in section or " 2 x  SELECT " in section, printed

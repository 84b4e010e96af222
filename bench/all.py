"""Every bench in one run, then every figure side by side with the machine it ran on.

Runs the benches one after the other, so that none measures another's load, echoes what each
printed, then prints the machine and the figures each marked with `bench.figures.figure`.
With PORTAL_TEST_DATABASE_URL set, the benches that can also measure PostgreSQL do; when that
PostgreSQL cannot be reached, no bench runs and the run exits with 1 (a run meant to measure
PostgreSQL must not pass as one that skipped it).
docs/performance.md records a run.

    .venv/bin/python bench/all.py [--only load_test.py,search.py,...]
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figures_in

BENCH = Path(__file__).resolve().parent

# Each bench with the arguments of the recorded run; a second entry of one script measures
# another database.
POSTGRES = os.environ.get("PORTAL_TEST_DATABASE_URL")
BENCHES: list[tuple[str, list[str]]] = [
    ("page_cost.py", []),
    ("export_throughput.py", []),
    ("sandbox_scaling.py", []),
    ("load_test.py", ["--saturation"]),
    ("mirror_sync.py", []),
    ("webhook_delivery.py", []),
    *([("webhook_delivery.py", [f"--postgres={POSTGRES}"])] if POSTGRES else []),
    ("search.py", []),
    ("keyset_pages.py", []),
    ("million.py", [f"--database-url={POSTGRES}"] if POSTGRES else ["--databases=sqlite"]),
]


def machine(postgres: str | None, load_before: str) -> list[tuple[str, str]]:
    """What the figures were measured on; `postgres`: the server's version, when measured;
    `load_before`: the load average as the run began (other work on the machine slows every
    figure)."""
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = next(
        (line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if "model name" in line),
        platform.processor() or "unknown",
    )
    memory_kib = int(Path("/proc/meminfo").read_text().split()[1])
    described = [
        ("date (UTC)", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")),
        ("CPU", f"{os.cpu_count()} cores, {model}"),
        ("memory", f"{memory_kib / 1024**2:.0f} GiB"),
        ("system", f"{platform.system()} {platform.release()} ({distribution()})"),
        ("Python", f"{platform.python_version()} ({sys.base_prefix})"),
        ("SQLite", sqlite3.sqlite_version),
        ("load average (1, 5, 15 min)", f"{load_before} before the run, {load_average()} after"),
    ]
    if postgres:
        described.append(("PostgreSQL", postgres))
    return described


def load_average() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def distribution() -> str:
    release = Path("/etc/os-release")
    if not release.exists():
        return "unknown distribution"
    fields = dict(line.split("=", 1) for line in release.read_text().splitlines() if "=" in line)
    return fields.get("PRETTY_NAME", "unknown distribution").strip('"')


def postgres_version(url: str) -> str:
    """The server's version; ends the run (exit status 1) when it cannot be reached."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(url, connect_args={"connect_timeout": 10})
    try:
        with engine.connect() as connection:
            return str(connection.exec_driver_sql("SHOW server_version").scalar())
    except sqlalchemy.exc.OperationalError as error:
        sys.exit(f"PORTAL_TEST_DATABASE_URL is set but PostgreSQL cannot be reached: {error.orig}")
    finally:
        engine.dispose()


def run(script: str, arguments: list[str]) -> str:
    """Run one bench with this interpreter; echo and return what it printed."""
    print(f"\n=== {script} {' '.join(arguments)}", flush=True)
    finished = subprocess.run(
        [sys.executable, str(BENCH / script), *arguments],
        capture_output=True,
        text=True,
        cwd=BENCH.parent,
        check=False,
    )
    print(finished.stdout, end="", flush=True)
    if finished.returncode:
        print(f"({script} exited with {finished.returncode}: a target missed, or it failed)")
        print(finished.stderr[-2000:], end="", flush=True)
    return finished.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated scripts to run (default: all)")
    arguments = parser.parse_args()
    chosen = set(arguments.only.split(",")) if arguments.only else None
    postgres = postgres_version(POSTGRES) if POSTGRES else None
    load_before = load_average()
    rows: list[tuple[str, str]] = []
    for script, script_arguments in BENCHES:
        if chosen is None or script in chosen:
            rows += [
                (f"{script}: {name}", value)
                for name, value in figures_in(run(script, script_arguments))
            ]
    rows = [*machine(postgres, load_before), ("", ""), *rows]
    width = max(len(name) for name, _ in rows)
    print("\n=== Every figure, side by side")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()

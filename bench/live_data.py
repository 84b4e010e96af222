"""Live data's figures in one run, side by side (issue 15, point 8; docs/performance.md).

Runs, one after the other so that none measures the others' load, `bench/mirror_sync.py`
(the first sync of `--operations` operations, and an idle merchant's API requests per minute),
`bench/webhook_delivery.py` (events delivered per second to a local shop) and `bench/search.py`
(search latency over that many mirrored operations), prints what each printed, then the four
figures in one table. With PORTAL_TEST_DATABASE_URL set, delivery and search are measured on
PostgreSQL too.

    .venv/bin/python bench/live_data.py [--operations 100000] [--idle-seconds 60] [--events 2000]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
# A line of bench/search.py's table: the kind of text searched, its median and p95 in ms.
LATENCY = r"^(\w[\w ]*?)\s{2,}([\d.]+)\s+([\d.]+)"


def run(script: str, *arguments: str) -> str:
    """Run a bench script with this interpreter; echo and return what it printed."""
    print(f"\n=== {script} {' '.join(arguments)}", flush=True)
    output = subprocess.run(
        [sys.executable, str(BENCH / script), *arguments],
        check=True,
        capture_output=True,
        text=True,
        cwd=BENCH.parent,
    ).stdout
    print(output, end="", flush=True)
    return output


def found(pattern: str, text: str) -> str:
    match = re.search(pattern, text, re.MULTILINE)
    return match.group(1) if match else "not measured"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=100_000)
    parser.add_argument("--idle-seconds", type=int, default=60)
    parser.add_argument("--events", type=int, default=2000)
    arguments = parser.parse_args()
    postgres = os.environ.get("PORTAL_TEST_DATABASE_URL")

    mirror = run(
        "mirror_sync.py",
        f"--operations={arguments.operations}",
        f"--idle-seconds={arguments.idle_seconds}",
    )
    delivery = {"SQLite": run("webhook_delivery.py", f"--events={arguments.events}")}
    if postgres:
        delivery["PostgreSQL"] = run(
            "webhook_delivery.py", f"--events={arguments.events}", f"--postgres={postgres}"
        )
    search = run("search.py", f"--operations={arguments.operations}")

    rows = [
        (
            f"first sync of {arguments.operations:,} operations",
            found(r"^\(a\) first sync: (.*)$", mirror),
        ),
        (
            "idle merchant, API requests per minute",
            found(r"^\(b\) idle merchant.*?: (.*)$", mirror),
        ),
    ]
    for name, output in delivery.items():
        figure = found(r"per second:\s+(.*)$", output)
        rows.append((f"webhooks delivered per second ({name})", figure))
    parts = re.split(r"^(SQLite|PostgreSQL): ", search, flags=re.MULTILINE)
    for database, section in zip(parts[1::2], parts[2::2], strict=True):
        for kind, median, p95 in re.findall(LATENCY, section, re.MULTILINE):
            name = f"{kind} at {arguments.operations:,} ({database})"
            rows.append((name, f"median {median} ms, p95 {p95} ms"))
    width = max(len(name) for name, _ in rows)
    print("\n=== Live data, side by side")
    for name, figure in rows:
        print(f"{name:<{width}}  {figure}")


if __name__ == "__main__":
    main()

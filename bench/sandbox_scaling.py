"""How the sandbox scales: seeding time and the latency of a filtered, sorted page of 100.

For 1,000, 10,000 and 100,000 operations: seeds a fresh database (timed), starts the sandbox on
it as a real server process, then times the same filtered and sorted list request over HTTP.
Targets (issue #2): seeding 100,000 operations under 60 s; the page under 50 ms median.

    .venv/bin/python bench/sandbox_scaling.py [--sizes 1000,10000,100000] [--requests 60]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox import db
from sandbox.seed import seed
from tests.support.sandbox_server import run_sandbox

QUERY = {
    "status": "1,3",
    "currency": "BTC,USDT,USD",
    "amount_from": "0.001",
    "created_from": "2000-01-01",
    "sort": "amount",
    "sort_type": "desc",
    "per_page": "100",
    "page": "3",
}


def time_seeding(path: Path, count: int) -> float:
    db.initialise(str(path))
    connection = db.connect(str(path))
    try:
        started = time.perf_counter()
        seed(connection, count, random_seed=1, ttl_minutes=60)
        return time.perf_counter() - started
    finally:
        connection.close()


def time_requests(path: Path, count: int) -> tuple[list[float], int]:
    with run_sandbox(path) as server:
        session = requests.Session()
        url = f"{server.api_url}/operations"
        headers = server.headers()
        total = session.get(url, params=QUERY, headers=headers, timeout=30).json()["meta"]["total"]
        timings = []
        for _ in range(count):
            started = time.perf_counter()
            response = session.get(url, params=QUERY, headers=headers, timeout=30)
            timings.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
        return timings, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--requests", type=int, default=60)
    arguments = parser.parse_args()
    print(f"query: {QUERY}")
    print(f"{'operations':>10}  {'seed s':>7}  {'matches':>7}  {'median ms':>9}  {'p95 ms':>7}")
    with tempfile.TemporaryDirectory() as folder:
        for size in (int(s) for s in arguments.sizes.split(",")):
            path = Path(folder) / f"bench-{size}.db"
            seconds = time_seeding(path, size)
            timings, total = time_requests(path, arguments.requests)
            p95 = statistics.quantiles(timings, n=20)[-1]
            print(
                f"{size:>10}  {seconds:>7.2f}  {total:>7}  "
                f"{statistics.median(timings):>9.2f}  {p95:>7.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()

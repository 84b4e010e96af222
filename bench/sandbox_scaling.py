"""How the sandbox scales: seeding time, a filtered page, deep pages, and reading everything.

For 1,000, 10,000 and 100,000 operations: seeds a fresh database (timed), starts the sandbox on
it as a real server process, then over HTTP
- times the same filtered and sorted list request (targets: seeding 100,000
  operations under 60 s; the page under 50 ms median);
- times pages 1, 100 and 1,000 (per_page 100) of the default order and of a filtered sort,
  in alternation: read again as they are ("repeated"), and each the first read after an
  operation was created ("after a change", when nothing remembered of the table holds);
  target: page 1,000 of 100,000 costs about what page 1 costs;
- reads every operation with a bare loop (per_page 100, pages in order), the sizes in
  alternation, and prints the median cost per row: target, about the same at 10,000 and
  100,000.

    .venv/bin/python bench/sandbox_scaling.py [--sizes 1000,10000,100000] [--requests 60]
        [--passes 3]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figure
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


DEEP_PAGES = (1, 100, 1000)
ORDERS = {
    "default": {},
    "filtered": {"created_from": "2000-01-01", "sort": "amount", "sort_type": "desc"},
}


class Client:
    """Timed requests to one running sandbox."""

    def __init__(self, server) -> None:
        self.session = requests.Session()
        self.url = f"{server.api_url}/operations"
        self.headers = server.headers()

    def get(self, params: dict) -> tuple[float, dict]:
        """Milliseconds for one list request, and its answer."""
        started = time.perf_counter()
        response = self.session.get(self.url, params=params, headers=self.headers, timeout=60)
        elapsed = (time.perf_counter() - started) * 1000
        response.raise_for_status()
        return elapsed, response.json()

    def change(self) -> None:
        """Create an operation: every remembered page boundary of the table is void after it."""
        body = {"amount": "0.5", "currency": "BTC", "order_id": "bench"}
        self.session.post(self.url, json=body, headers=self.headers, timeout=60).raise_for_status()


def time_filtered_page(client: Client, count: int) -> tuple[list[float], int]:
    total = client.get(QUERY)[1]["meta"]["total"]
    return [client.get(QUERY)[0] for _ in range(count)], total


def time_deep_pages(client: Client, rounds: int) -> dict[tuple[str, int, str], list[float]]:
    """(order, page, "repeated" or "after a change") -> milliseconds, every kind in each round."""
    timings: dict[tuple[str, int, str], list[float]] = {}
    for _ in range(rounds):
        for order, params in ORDERS.items():
            for page in DEEP_PAGES:
                query = {**params, "per_page": "100", "page": str(page)}
                client.change()
                timings.setdefault((order, page, "after a change"), []).append(client.get(query)[0])
                timings.setdefault((order, page, "repeated"), []).append(client.get(query)[0])
    return timings


def time_reading_everything(client: Client) -> tuple[int, float]:
    """A bare loop over every page in order: rows read and microseconds per row."""
    started = time.perf_counter()
    rows, page, last_page = 0, 1, 1
    while page <= last_page:
        answer = client.get({"per_page": "100", "page": str(page)})[1]
        rows += len(answer["data"])
        last_page = answer["meta"]["last_page"]
        page += 1
    return rows, (time.perf_counter() - started) * 1e6 / rows


def print_deep_pages(size: int, timings: dict[tuple[str, int, str], list[float]]) -> None:
    for order in ORDERS:
        for kind in ("repeated", "after a change"):
            medians = []
            for page in DEEP_PAGES:
                if page * 100 > size:  # past the last page: not a deep page
                    medians.append(f"{'-':>8}")
                else:
                    medians.append(f"{statistics.median(timings[order, page, kind]):>8.2f}")
            print(f"{size:>10}  {order:>8}  {kind:>14}  {'  '.join(medians)}", flush=True)
            if size >= 100 * max(DEEP_PAGES):
                pages = ", ".join(
                    f"page {page} {median.strip()} ms"
                    for page, median in zip(DEEP_PAGES, medians, strict=True)
                )
                figure(f"sandbox, {size:,} operations, {order} order, {kind}", pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--passes", type=int, default=3, help="reads of everything per size")
    arguments = parser.parse_args()
    sizes = [int(s) for s in arguments.sizes.split(",")]
    deep = {}
    print(f"query: {QUERY}")
    print(f"{'operations':>10}  {'seed s':>7}  {'matches':>7}  {'median ms':>9}  {'p95 ms':>7}")
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as servers:
        clients = {}
        for size in sizes:
            path = Path(folder) / f"bench-{size}.db"
            seconds = time_seeding(path, size)
            clients[size] = client = Client(servers.enter_context(run_sandbox(path)))
            timings, total = time_filtered_page(client, arguments.requests)
            deep[size] = time_deep_pages(client, max(arguments.requests // 4, 5))
            p95 = statistics.quantiles(timings, n=20)[-1]
            print(
                f"{size:>10}  {seconds:>7.2f}  {total:>7}  "
                f"{statistics.median(timings):>9.2f}  {p95:>7.2f}",
                flush=True,
            )
            figure(
                f"sandbox, {size:,} operations, filtered sorted page of 100",
                f"median {statistics.median(timings):.2f} ms, p95 {p95:.2f} ms; "
                f"seeded in {seconds:.1f} s",
            )
        print(f"\ndeep pages, per_page 100, median ms; filtered: {ORDERS['filtered']}")
        print(
            f"{'operations':>10}  {'order':>8}  {'read':>14}  "
            + "  ".join(f"{f'page {page}':>8}" for page in DEEP_PAGES)
        )
        for size in sizes:
            print_deep_pages(size, deep[size])
        # The sizes in alternation, so that a busy moment of the machine falls on all of them.
        per_row: dict[int, list[float]] = {size: [] for size in sizes}
        rows = {}
        for _ in range(arguments.passes):
            for size in sizes:
                rows[size], cost = time_reading_everything(clients[size])
                per_row[size].append(cost)
    print(f"\nreading every operation, per_page 100, pages in order, {arguments.passes} passes")
    print(f"{'operations':>10}  {'rows':>7}  {'median us/row':>13}  {'vs smallest':>11}")
    smallest = statistics.median(per_row[min(sizes)])
    for size in sizes:
        cost = statistics.median(per_row[size])
        print(f"{size:>10}  {rows[size]:>7}  {cost:>13.1f}  {cost / smallest:>11.2f}")
        figure(
            f"sandbox, reading all {size:,} operations, cost per row",
            f"{cost:.1f} us ({cost / smallest:.2f} x the {min(sizes):,}'s)",
        )


if __name__ == "__main__":
    main()

"""CSV export throughput and memory: the portal against a bare `requests` loop, side by side.

For 10,000 and 20,000 seeded operations, under `flask run` and under gunicorn: a bare loop pages
the sandbox at 100 per page and writes every record as CSV, and the portal, signed in as the
accountant, exports the same list through `/operations/export.csv`. The two alternate, the
sizes too, for several rounds; printed are the median rates, the median of each round's ratio
(target: portal >= 1.0x the bare loop) and the portal's peak resident memory. Each
size has a portal process of its own, and another exports 1,000 rows as the memory baseline
(target: flat, the 20,000-row export's peak within a few MB of it).

    .venv/bin/python bench/export_throughput.py [--sizes 10000,20000] [--rounds 5]
        [--servers flask,gunicorn]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figure
from tests.support.portal_server import run_portal
from tests.support.sandbox_server import run_sandbox

CHUNK = 64 * 1024


def bare_loop(sandbox, out: Path) -> tuple[int, float]:
    """Page the API directly and write CSV: the floor the portal is compared with."""
    session = requests.Session()
    started = time.perf_counter()
    rows = 0
    with out.open("w", newline="") as file:
        writer = csv.writer(file)
        page, last_page = 1, 1
        while page <= last_page:
            answer = session.get(
                f"{sandbox.api_url}/operations",
                params={"page": page, "per_page": 100},
                headers=sandbox.headers(),
                timeout=60,
            ).json()
            if page == 1:
                writer.writerow([key for key in answer["data"][0] if key != "transactions"])
            for record in answer["data"]:
                writer.writerow([value for key, value in record.items() if key != "transactions"])
                rows += 1
            last_page = answer["meta"]["last_page"]
            page += 1
    return rows, time.perf_counter() - started


def portal_export(portal, out: Path) -> tuple[int, float]:
    """Download the portal's export of every operation, as an accountant would."""
    session = portal.signed_in_session("accountant@acme.test")
    started = time.perf_counter()
    lines = 0
    with (
        session.get(f"{portal.url}/operations/export.csv", stream=True, timeout=600) as answer,
        out.open("wb") as file,
    ):
        answer.raise_for_status()
        for chunk in answer.iter_content(CHUNK):
            file.write(chunk)
            lines += chunk.count(b"\n")
    return lines - 1, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,20000")
    parser.add_argument("--baseline", type=int, default=1000, help="rows of the memory baseline")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--servers", default="flask,gunicorn")
    arguments = parser.parse_args()
    sizes = [int(size) for size in arguments.sizes.split(",")]
    print(
        f"{'server':>8}  {'operations':>10}  {'bare rows/s':>11}  {'portal rows/s':>13}  "
        f"{'ratio':>5}  {'peak MB':>7}"
    )
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as sandboxes:
        root = Path(folder)
        sandbox = {
            size: sandboxes.enter_context(run_sandbox(root / f"sandbox-{size}.db", seed=size))
            for size in [arguments.baseline, *sizes]
        }
        for server in arguments.servers.split(","):
            with contextlib.ExitStack() as portals:
                portal = {}
                for size in sandbox:
                    instance = root / f"{server}-{size}"
                    instance.mkdir()
                    running = run_portal(instance, sandbox[size], gunicorn=server == "gunicorn")
                    portal[size] = portals.enter_context(running)
                compare(server, sizes, arguments.rounds, sandbox, portal, root)
                baseline = portal[arguments.baseline]
                assert portal_export(baseline, root / "portal.csv")[0] == arguments.baseline
                growth = portal[max(sizes)].peak_memory_kib() - baseline.peak_memory_kib()
                print(
                    f"{server:>8}  peak memory, {max(sizes)} rows vs {arguments.baseline}: "
                    f"{growth / 1024:+.1f} MB",
                    flush=True,
                )
                figure(
                    f"export peak memory, {max(sizes):,} rows vs {arguments.baseline:,} ({server})",
                    f"{growth / 1024:+.1f} MB",
                )


def compare(server: str, sizes: list[int], rounds: int, sandbox: dict, portal: dict, root: Path):
    """Bare loop and portal export in alternation (who goes first alternates too)."""
    bare_rates: dict[int, list[float]] = {size: [] for size in sizes}
    portal_rates: dict[int, list[float]] = {size: [] for size in sizes}
    for round_number in range(rounds):
        for size in sizes:
            runs = [("bare", bare_loop, sandbox[size]), ("portal", portal_export, portal[size])]
            for kind, run, target in runs[:: 1 if round_number % 2 else -1]:
                rows, seconds = run(target, root / f"{kind}.csv")
                assert rows == size, (kind, rows, size)
                (bare_rates if kind == "bare" else portal_rates)[size].append(rows / seconds)
    for size in sizes:
        ratios = [p / b for p, b in zip(portal_rates[size], bare_rates[size], strict=True)]
        bare_rate, portal_rate = (statistics.median(r[size]) for r in (bare_rates, portal_rates))
        print(
            f"{server:>8}  {size:>10}  {bare_rate:>11.0f}  {portal_rate:>13.0f}  "
            f"{statistics.median(ratios):>5.2f}  {portal[size].peak_memory_kib() / 1024:>7.1f}",
            flush=True,
        )
        figure(
            f"export of {size:,} operations ({server})",
            f"{portal_rate:,.0f} rows/s, bare loop {bare_rate:,.0f} rows/s, "
            f"ratio {statistics.median(ratios):.2f} (target >= 1.0)",
        )


if __name__ == "__main__":
    main()

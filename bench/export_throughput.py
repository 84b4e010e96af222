"""CSV export throughput and memory: the portal against a bare `requests` loop, side by side.

For 10,000 and 100,000 seeded operations: a bare loop pages the sandbox at 100 per page and
writes every record as CSV; then the portal (under gunicorn as in production, signed in as
the accountant) exports the same list through `/operations/export.csv`. Both rates and their ratio
are printed (target: portal >= 0.9x the bare loop), with the portal's peak resident memory.
A fresh portal process exports 1,000 rows for the memory baseline (target: the 100,000-row
export's peak exceeds it by less than 50 MB).

    .venv/bin/python bench/export_throughput.py [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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
    parser.add_argument("--sizes", default="1000,10000,100000")
    sizes = [int(size) for size in parser.parse_args().sizes.split(",")]
    print(
        f"{'operations':>10}  {'bare rows/s':>11}  {'portal rows/s':>13}  {'ratio':>5}  "
        f"{'portal peak MB':>14}"
    )
    peaks = {}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for size in sizes:
            with run_sandbox(root / f"sandbox-{size}.db", seed=size) as sandbox:
                bare_rows, bare_seconds = bare_loop(sandbox, root / "bare.csv")
                instance = root / f"portal-{size}"
                instance.mkdir()
                with run_portal(instance, sandbox, gunicorn=True) as portal:
                    rows, seconds = portal_export(portal, root / "portal.csv")
                    peaks[size] = portal.peak_memory_kib() / 1024
            assert rows == bare_rows == size, (rows, bare_rows, size)
            bare_rate, portal_rate = bare_rows / bare_seconds, rows / seconds
            print(
                f"{size:>10}  {bare_rate:>11.0f}  {portal_rate:>13.0f}  "
                f"{portal_rate / bare_rate:>5.2f}  {peaks[size]:>14.1f}",
                flush=True,
            )
    if len(peaks) > 1:
        smallest, largest = min(peaks), max(peaks)
        growth = peaks[largest] - peaks[smallest]
        print(f"peak memory growth from {smallest} to {largest} rows: {growth:.1f} MB")


if __name__ == "__main__":
    main()

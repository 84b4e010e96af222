"""The mirror's first sync counted in instructions, which the machine's load does not change.

The same sync on this shared 2-core machine takes from one run to the next up to half as long
again, so a change worth a few percent cannot be seen in seconds. Valgrind's cachegrind counts
the instructions the portal's process executes. A first sync is run for each of two sizes of
the seeded sandbox (which runs in a process of its own, not counted); the difference, divided
by the difference in operations, is what one more operation costs the sync (its transactions,
events, ledger movements and search rows included), without the start-up both runs share.

    .venv/bin/python bench/sync_instructions.py [--operations 1000 3000]

Needs `valgrind` (Debian: `apt-get install valgrind`); exits 2 without it. About a minute per
1,000 operations.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figure
from tests.support.portal_app import connected_portal
from tests.support.sandbox_server import run_sandbox

VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
INSTRUCTIONS = re.compile(r"I\s+refs:\s+([\d,]+)")
SYNCED = re.compile(r"synced: (\d+) operations, (\d+) transactions, (\d+) events")


def first_sync(operations: int) -> None:
    """A portal's first sync of a sandbox seeded with `operations`; what it wrote, printed."""
    from portal.identity.rules import accounts
    from portal.live.rules import mirror

    with (
        tempfile.TemporaryDirectory(prefix="sync-instructions-") as name,
        run_sandbox(Path(name) / "sandbox.db", seed=operations) as sandbox,
        connected_portal(Path(name), sandbox) as app,
        app.app_context(),
    ):
        report = mirror.sync_merchant(accounts.merchant_named("Acme").id)
        assert report is not None and report.error is None, report
        print(
            f"synced: {report.operations} operations, {report.transactions} transactions, "
            f"{report.events} events"
        )


def counted(operations: int) -> tuple[int, tuple[int, ...]]:
    """The instructions of a process that makes one first sync, and what the sync wrote."""
    finished = subprocess.run(
        [*VALGRIND, sys.executable, __file__, "--child", str(operations)],
        capture_output=True,
        text=True,
        check=True,
    )
    instructions = INSTRUCTIONS.search(finished.stderr)
    synced = SYNCED.search(finished.stdout)
    assert instructions and synced, finished.stderr[-2000:]
    return int(instructions.group(1).replace(",", "")), tuple(map(int, synced.groups()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, nargs=2, default=[1000, 3000])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child is not None:
        first_sync(arguments.child)
        return
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        sys.exit(2)
    small, large = sorted(arguments.operations)
    (fewer, written_fewer), (more, written_more) = counted(small), counted(large)
    for size, instructions, written in ((small, fewer, written_fewer), (large, more, written_more)):
        operations, transactions, events = written
        print(
            f"first sync of {size:,} operations: {instructions:,} instructions "
            f"({operations:,} operations, {transactions:,} transactions, {events:,} events)"
        )
    each = (more - fewer) / (large - small)
    print(f"one more operation: {each:,.0f} instructions")
    figure("first sync, instructions per operation", f"{each:,.0f}")


if __name__ == "__main__":
    main()

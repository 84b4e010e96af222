"""Webhook delivery rate: events delivered per second to a local shop, over real HTTP, from a
real portal database (a migrated SQLite file, or a schema of its own, dropped afterwards, in
the PostgreSQL database of `--postgres`).

N events are written as the mirror writes them; `webhooks.deliver_due` (what each worker tick
calls) then fans them out and sends them, one worker, until every one is delivered. The shop
answers 200 at once, so the figure is the portal's own cost per event: the fan-out, the lease,
the signature, the POST and the attempt's record.

    .venv/bin/python bench/webhook_delivery.py [--events 2000] [--postgres URL]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from cryptography.fernet import Fernet

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figure
from tests.support.databases import migrated, postgres_schema
from tests.support.shop import run_shop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--postgres", help="a PostgreSQL database URL (default: SQLite)")
    arguments = parser.parse_args()
    with database(arguments.postgres) as url:
        rate = measure(arguments.events, url)
    kind = "PostgreSQL" if arguments.postgres else "SQLite"
    print(f"events per second:       {rate:.0f} (one worker, {kind})")
    figure(f"webhooks delivered per second, one worker ({kind})", f"{rate:.0f}")


@contextmanager
def database(postgres: str | None) -> Iterator[str]:
    """A fresh database: a schema of its own in `postgres`, or a SQLite file."""
    if postgres:
        os.environ["PORTAL_TEST_DATABASE_URL"] = postgres
        with postgres_schema() as url:
            yield url
    else:
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{folder}/portal.sqlite3"


def measure(count: int, database_url: str) -> float:
    """Write `count` events, deliver them all; events per second."""
    from portal import create_app
    from portal.extensions import db
    from portal.identity.models import Role
    from portal.identity.rules import accounts
    from portal.live.rules import events, webhooks

    with run_shop() as shop:
        app = create_app(
            {
                "SECRET_KEY": "bench",
                "TOKEN_KEYS": Fernet.generate_key().decode(),
                "DATABASE_URL": database_url,
                "PASSWORD_HASH_METHOD": "pbkdf2:sha256:1",
            }
        )
        migrated(app)
        with app.app_context():
            merchant = accounts.merchant_named(f"Bench {time.time_ns()}", create=True)
            accounts.add_user(merchant, f"owner-{time.time_ns()}@bench.test", Role.OWNER, "x" * 12)
            webhooks.save_endpoint(merchant, shop.url, [t.value for t in webhooks.DEFAULT_TYPES])
            now = datetime.now(UTC)
            for number in range(count):
                operation_id = f"op-{number}"
                events.record(
                    merchant.id,
                    events.EventType.OPERATION_CONFIRMED,
                    dedup_key=f"bench:{operation_id}",
                    data={"id": operation_id, "status": "confirmed", "amount": "0.015"},
                    occurred_at=now,
                    operation_id=operation_id,
                )
            db.session.commit()

            started = time.perf_counter()
            delivered = 0
            while delivered < count:
                delivered += webhooks.deliver_due(budget_seconds=60)
            elapsed = time.perf_counter() - started
            db.session.remove()
            db.engine.dispose()

    print(f"events delivered:        {delivered} (the shop received {len(shop.requests())})")
    print(f"time:                    {elapsed:.2f} s")
    return delivered / elapsed


if __name__ == "__main__":
    main()

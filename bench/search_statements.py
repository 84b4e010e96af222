"""Search statement by statement: where a search's time goes on a database filled already.

Runs the search rule (`portal.payments.rules.search.search_mirror`, what `/search` asks of the
mirror) in this process, on the database at `--database-url`: a schema that
`bench/million.py --keep-schema` left (it prints its URL), or any other database the
migrations made whose merchant has mirrored rows. For each kind of fragment (cut from the
merchant's own rows as `bench/million.py` cuts them) it prints the median time of the whole
rule, then each statement the rule ran: its time a search, on average, and how many times a
search ran it. Nothing is written.

    .venv/bin/python bench/search_statements.py --database-url 'postgresql+psycopg://...' \
        [--merchant Acme] [--searches 20]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import figure
from bench.mirror_fill import KINDS, fragment, median_and_p95
from tests.support.databases import portal_on
from tests.support.factories import MERCHANT

SHOWN = 100  # the first characters of a statement, to tell it from the others
SAMPLED = 64  # rows of each table that fragments are cut from
WARM_UP = 3  # searches of each kind run before those timed


def sampled_values(merchant_id: int, count: int, randomness: random.Random) -> dict[str, list]:
    """Values of each kind from `count` of the merchant's rows picked at random by id."""
    from portal.extensions import db
    from portal.payments.models import MirroredOperation, MirroredTransaction

    columns = {
        MirroredOperation: {
            "order number": MirroredOperation.order_id,
            "operation id": MirroredOperation.operation_id,
            "address": MirroredOperation.address,
        },
        MirroredTransaction: {
            "transaction hash": MirroredTransaction.tx_id,
            "transaction id": MirroredTransaction.transaction_id,
        },
    }
    values: dict[str, list] = {kind: [] for kind in KINDS}
    for model, kinds in columns.items():
        mine = model.merchant_id == merchant_id
        low, high = db.session.execute(
            sa.select(sa.func.min(model.id), sa.func.max(model.id)).where(mine)
        ).one()
        if low is None:
            sys.exit(f"the merchant has no {model.__tablename__} to search")
        for _ in range(count):
            picked = randomness.randint(low, high)
            row = db.session.execute(
                sa.select(*kinds.values())
                .where(mine, model.id >= picked)
                .order_by(model.id)
                .limit(1)
            ).one()
            for kind, value in zip(kinds, row, strict=True):
                if value:
                    values[kind].append(value)
    return values


def timed_searches(merchant_id: int, texts: list[str], spent: list) -> list[float]:
    """Milliseconds the search rule took for each of `texts` after the first `WARM_UP`, whose
    statements are left out of `spent`."""
    from portal.extensions import db
    from portal.payments.rules.search import search_mirror

    totals = []
    for number, text in enumerate(texts):
        if number == WARM_UP:
            spent.clear()
        begun = time.perf_counter()
        search_mirror(merchant_id, text)
        if number >= WARM_UP:
            totals.append((time.perf_counter() - begun) * 1000)
        db.session.rollback()
    return totals


def statements_of(spent: list[tuple[str, float]], searches: int) -> list[str]:
    """A line per statement, the costliest first: its milliseconds a search and times run."""
    by_statement: dict[str, list[float]] = defaultdict(list)
    for statement, elapsed in spent:
        by_statement[statement].append(elapsed)
    return [
        f"  {sum(times) / searches:7.2f} ms, {len(times) / searches:.0f} x  {statement}"
        for statement, times in sorted(by_statement.items(), key=lambda item: -sum(item[1]))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--merchant", default=MERCHANT)
    parser.add_argument("--searches", type=int, default=20, help="of each kind")
    arguments = parser.parse_args()

    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named

    app = portal_on(arguments.database_url)
    spent: list[tuple[str, float]] = []  # each statement run, with its milliseconds

    def started(conn, _cursor, _statement, _parameters, _context, _many) -> None:
        conn.info["started"] = time.perf_counter()

    def ended(conn, _cursor, statement, _parameters, _context, _many) -> None:
        elapsed = (time.perf_counter() - conn.info.pop("started")) * 1000
        spent.append((" ".join(statement.split())[:SHOWN], elapsed))

    randomness = random.Random(5)
    with app.app_context():
        merchant_id = merchant_named(arguments.merchant).id
        values = sampled_values(merchant_id, SAMPLED, randomness)
        sa.event.listen(db.engine, "before_cursor_execute", started)
        sa.event.listen(db.engine, "after_cursor_execute", ended)
        where = f"{arguments.merchant}, {db.engine.dialect.name}"
        print(f"{where}: {arguments.searches} searches a kind")
        for kind in KINDS:
            texts = [
                fragment(randomness.choice(values[kind]), randomness)
                for _ in range(WARM_UP + arguments.searches)
            ]
            median, p95 = median_and_p95(timed_searches(merchant_id, texts, spent))
            print(f"\n{kind} (e.g. {texts[WARM_UP]!r}): median {median:.1f} ms, p95 {p95:.1f} ms")
            print("\n".join(statements_of(spent, arguments.searches)))
            figure(f"search rule by {kind} ({where})", f"median {median:.1f} ms")


if __name__ == "__main__":
    main()

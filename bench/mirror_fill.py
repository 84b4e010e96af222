"""A large merchant's rows written in bulk, and the signed-in requests that time pages on them:
what `bench/search.py` and `bench/million.py` share.

`fill` writes a merchant's mirror (operations with about 1.5 transactions each, realistic ids,
statuses and money) in batches, straight into the tables a sync writes, and with `history`
also what a sync derives from them: the ledger's payments and fees, the events of the past
(written as a first sync writes them, telling nobody) and the rates read every 10 minutes.
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import TYPE_CHECKING

import requests

from tests.support.forms import CSRF_FIELD, PASSWORD
from tests.support.mirror_rows import operation_columns, transaction_columns

if TYPE_CHECKING:
    from sqlalchemy import Connection

BATCH = 5_000
# Status of an operation -> its share; most are paid or abandoned.
STATUSES = {"confirmed": 60, "expired": 25, "new": 8, "failed": 5, "canceled": 2}
# Price of one unit in the reporting currency (USD), for the ledger's values and rates.
PRICES = {"BTC": Decimal(60000), "ETH": Decimal(3000), "USDT": Decimal(1), "LTC": Decimal(80)}
RATES_EVERY = timedelta(minutes=10)
KINDS = ("order number", "operation id", "address", "transaction hash", "transaction id")


def _stamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def rows(
    count: int,
    randomness: random.Random,
    *,
    days: int = 90,
    first_id: int = 1,
    recent_attention: bool = False,
) -> Iterator[tuple[dict, list[dict]]]:
    """Operations over the last `days`, each with 0 to 4 transactions (1.5 on average). With
    `recent_attention`, the failed ones and those paid more or less than due are of the days
    the attention list shows them (`FAILED_WITHIN`, `HISTORY_WITHIN`), as in a shop whose
    failures and differences come at the same rate all year."""
    from portal.payments.rules.attention import FAILED_WITHIN, HISTORY_WITHIN

    now = datetime.now(UTC)
    transaction_id = first_id * 2
    for number in range(first_id, first_id + count):
        created = now - timedelta(seconds=randomness.randrange(days * 86400))
        status = randomness.choices(list(STATUSES), list(STATUSES.values()))[0]
        currency = randomness.choice(list(PRICES))
        due = randomness.randrange(1, 10**6)
        amount = f"{due / 10**4:.4f}"
        # What the attention list shows beside late and undecided money: a quarter of the new
        # operations partly paid, 5 % of the confirmed ones paid 10 % more or less than due.
        paid = amount if status == "confirmed" else None
        if status == "new" and randomness.random() < 0.25:
            paid = f"{due / 2 / 10**4:.4f}"
        elif status == "confirmed" and randomness.random() < 0.05:
            paid = f"{due * randomness.choice([0.9, 1.1]) / 10**4:.4f}"
            if recent_attention:
                created = now - randomness.random() * (HISTORY_WITHIN - timedelta(days=1))
        if recent_attention and status == "failed":
            created = now - randomness.random() * (FAILED_WITHIN - timedelta(days=1))
        operation = {
            "id": str(number),
            "application_id": "1",
            "application_name": "Shop",
            "category": "application",
            "order_id": f"ORD-{randomness.randrange(10**9):09d}-{uuid.uuid4().hex[:6]}",
            "amount": amount,
            "fee": "0.01",
            "amount_paid": paid,
            "rate": "1",
            "currency": currency,
            "currency_paid": currency,
            "status": status,
            "address": "tb1q" + uuid.uuid4().hex + uuid.uuid4().hex[:6],
            "created_at": _stamp(created),
            "updated_at": _stamp(created + timedelta(minutes=10)),
            "payment_url": f"https://pay.example/{number}",
            "redirect_url": None,
        }
        transactions = []
        # Paid operations have 1 to 4 transactions (1.5 per operation in all); 1 % of the
        # expired ones got a payment after all, too late.
        late = status == "expired" and randomness.random() < (0.04 if recent_attention else 0.01)
        for _ in range(randomness.choice([1, 2, 3, 4]) if paid or late else 0):
            transaction_id += 1
            state = "undefined" if randomness.random() < 0.02 else "confirmed"
            transactions.append(
                {
                    "id": str(transaction_id),
                    "tx_id": uuid.uuid4().hex + uuid.uuid4().hex,
                    "amount": paid or amount,
                    "status": state,
                    "linked": False,
                    "reject_reason": None,
                    "created_at": _stamp(created + timedelta(minutes=5)),
                    "updated_at": _stamp(created + timedelta(minutes=5)),
                }
            )
        yield {**operation, "transactions": transactions}, transactions


@dataclass
class Filled:
    """What a fill wrote: values that searches cut fragments from, and the rows per table."""

    kept: dict[str, list[str]] = field(default_factory=lambda: {kind: [] for kind in KINDS})
    tables: Counter[str] = field(default_factory=Counter)
    several_transactions: int = 0
    attention: dict[str, int] = field(default_factory=dict)


def fill(
    app,
    count: int,
    *,
    merchant: str = "Acme",
    days: int = 90,
    first_id: int = 1,
    history: bool = False,
) -> Filled:
    """`merchant`'s mirror (with `history`, its ledger, events and rates too, and the failures
    and differences of the attention list as recent as it shows them), filled in batches and
    marked synced, with the menu's count counted as a sync counts it."""
    import sqlalchemy as sa

    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.live.models import Event, MirrorState
    from portal.live.rules.events import current_generation
    from portal.money.models import LedgerEntry, RateRecord
    from portal.money.rules import ledger_totals
    from portal.payments.models import MirroredOperation, MirroredTransaction
    from portal.payments.rules import attention, search

    randomness = random.Random(7 + first_id)
    filled = Filled()
    with app.app_context():
        merchant_id = merchant_named(merchant).id
        generation = current_generation(merchant_id)
        batches: dict[type, list[dict]] = {
            MirroredOperation: [], MirroredTransaction: [], LedgerEntry: [], Event: [],
        }  # fmt: skip

        def flush() -> None:
            movements = [SimpleNamespace(**row) for row in batches[LedgerEntry]]
            for model, batch in batches.items():
                if model in search.FTS_TABLES:  # as the mirror's sync inserts them
                    search.insert_searchable(model, batch)
                elif batch:
                    db.session.execute(sa.insert(model), batch)
                filled.tables[model.__tablename__] += len(batch)
                batch.clear()
            ledger_totals.add(merchant_id, generation, movements)  # as each booking does
            db.session.commit()

        for record, raw_transactions in rows(
            count, randomness, days=days, first_id=first_id, recent_attention=history
        ):
            columns = operation_columns(merchant_id, record)
            batches[MirroredOperation].append(columns)
            filled.several_transactions += len(raw_transactions) > 1
            if randomness.random() < 0.001:
                filled.kept["order number"].append(record["order_id"])
                filled.kept["operation id"].append(record["id"])
                filled.kept["address"].append(record["address"])
            for raw in raw_transactions:
                batches[MirroredTransaction].append(
                    transaction_columns(merchant_id, record["id"], raw)
                )
                if randomness.random() < 0.001:
                    filled.kept["transaction hash"].append(raw["tx_id"])
                    filled.kept["transaction id"].append(raw["id"])
            if history:
                of_merchant = {"merchant_id": merchant_id, "connection_generation": generation}
                batches[LedgerEntry] += _ledger_rows(of_merchant, columns)
                batches[Event] += _event_rows(of_merchant, record)
            if len(batches[MirroredOperation]) >= BATCH:
                flush()
        flush()
        if history:
            rates = _rate_rows(merchant_id, generation, days)
            db.session.execute(sa.insert(RateRecord), rates)
            filled.tables[RateRecord.__tablename__] += len(rates)
        db.session.commit()
        if db.engine.dialect.name == "postgresql":
            # What autovacuum does soon after a fill this size: the statistics, and the
            # visibility map that lets a count read an index without visiting the rows. Before
            # the counts below: with the statistics of before the fill, PostgreSQL plans them
            # as if the merchant had no rows (a nested loop over each pair of rows, for hours
            # at a million operations).
            with db.engine.connect() as connection:
                connection = connection.execution_options(isolation_level="AUTOCOMMIT")
                for table in filled.tables:
                    connection.execute(sa.text(f"VACUUM ANALYZE {table}"))
                print(f"{merchant}'s tables after VACUUM: {_visibility(connection, filled)}")
        state = db.session.get(MirrorState, merchant_id) or MirrorState(merchant_id=merchant_id)
        state.last_sync_at = datetime.now(UTC)
        db.session.add(state)
        db.session.flush()
        attention.recount(merchant_id)
        db.session.commit()
        filled.attention = {r.value: n for r, n in attention.counts(merchant_id).items()}
        print(f"{merchant}'s attention list: " + ", ".join(
            f"{reason} {n:,}" for reason, n in filled.attention.items()
        ))  # fmt: skip
    return filled


def _visibility(connection: Connection, filled: Filled) -> str:
    """The share of each filled table's pages that VACUUM marked visible to every transaction
    (an index-only scan reads no row of those), and the other sessions' open transactions: one
    that began before the fill's last rows keeps VACUUM from marking their pages, and the
    attention list's counts then read every row (a test run beside the bench does that).
    Empty tables are left out."""
    import sqlalchemy as sa

    shares = connection.execute(
        sa.text(
            "SELECT relname, relallvisible * 100.0 / relpages FROM pg_class "
            "WHERE oid = ANY(CAST(:tables AS regclass[])) AND relpages > 0"
        ),
        {"tables": list(filled.tables)},
    ).all()
    holding = connection.scalar(
        sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
            "AND datname = current_database() "
            "AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)"
        )
    )
    visible = ", ".join(f"{table} {share:.1f} %" for table, share in shares)
    return f"pages visible to every transaction: {visible}; other open transactions: {holding}"


def _ledger_rows(of_merchant: dict, operation: dict) -> list[dict]:
    """A paid operation's payment and fee as the ledger books them, valued in USD."""
    received, currency = operation["amount_paid"], operation["currency"]
    if not received:
        return []
    at, price = operation["updated_at"], PRICES[currency]
    common = {
        **of_merchant,
        "currency": currency,
        "operation_id": operation["operation_id"],
        "occurred_at": at,
        "api_at": at,
        "priced_in": currency,
        "operation_rate": Decimal(1),
        "value_currency": "USD",
        "rate": price,
        "rate_at": at,
        "created_at": at,
    }
    fee = Decimal("-0.01")
    return [
        {**common, "key": f"payment:{operation['operation_id']}:1", "kind": "payment",
         "amount": received, "value": received * price},
        {**common, "key": f"fee:{operation['operation_id']}", "kind": "fee", "amount": fee,
         "value": fee * price},
    ]  # fmt: skip


def _event_rows(of_merchant: dict, record: dict) -> list[dict]:
    """The events a first sync writes for an operation of the past: its creation, its status
    when it has one, each transaction received; telling nobody."""
    operation_id = record["id"]
    changes = [("operation.created", None, record["created_at"])]
    if record["status"] != "new":
        changes.append((f"operation.{record['status']}", None, record["updated_at"]))
    changes += [("transaction.received", t["id"], t["created_at"]) for t in record["transactions"]]
    return [
        {
            **of_merchant,
            "public_id": f"evt_{uuid.uuid4().hex}",
            "type": type_,
            "operation_id": operation_id,
            "transaction_id": transaction_id,
            "dedup_key": f"{of_merchant['connection_generation']}:{type_}:{operation_id}:"
            f"{transaction_id}",
            "data": record,
            "notify": False,
            "occurred_at": datetime.fromisoformat(at),
            "created_at": datetime.fromisoformat(at),
        }
        for type_, transaction_id, at in changes
    ]


def _rate_rows(merchant_id: int, generation: int, days: int) -> list[dict]:
    """The rates as a sync records them when they change between reads: a row each
    `RATES_EVERY` over the last `days`."""
    now = datetime.now(UTC)
    moments = int(timedelta(days=days) / RATES_EVERY)
    return [
        {
            "merchant_id": merchant_id,
            "connection_generation": generation,
            "recorded_at": now - RATES_EVERY * step,
            "last_seen_at": now - RATES_EVERY * step,
            "rates": {f"{base}:USD": str(price) for base, price in PRICES.items()},
        }
        for step in range(moments, 0, -1)
    ]


def signed_in(url: str) -> requests.Session:
    """A session of the merchant's owner."""
    session = requests.Session()
    token = CSRF_FIELD.search(session.get(f"{url}/login", timeout=30).text).group(1)
    data = {"email": "owner@acme.test", "password": PASSWORD, "csrf_token": token}
    answer = session.post(f"{url}/login", data=data, allow_redirects=False, timeout=30)
    assert answer.status_code == 302, "sign-in failed"
    return session


def fragment(value: str, randomness: random.Random) -> str:
    """A part of `value` in the middle, in another case, as a person would type it: ids whole
    or 4 of their digits, the others 6 to 10 characters."""
    if value.isdigit():
        return value if len(value) <= 4 else value[1:5]
    size = randomness.randint(6, 10)
    start = randomness.randrange(0, max(1, len(value) - size))
    return value[start : start + size].upper()


def timed(call: Callable[[], requests.Response]) -> float:
    """Milliseconds `call` took; a failed answer raises."""
    started = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed


def latency(call: Callable[[], requests.Response], requests_made: int) -> tuple[float, float]:
    """Median and p95 of `call` in milliseconds, after three calls that warm it up."""
    for _ in range(3):
        timed(call)
    return median_and_p95([timed(call) for _ in range(requests_made)])


def median_and_p95(times: list[float]) -> tuple[float, float]:
    """The median of `times` and the time 95 % of them do not pass."""
    ordered = sorted(times)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def searches(
    session: requests.Session, url: str, values: list[str], randomness: random.Random
) -> Callable[[], requests.Response]:
    """A search for a fragment of one of `values`, another each time."""
    texts = [fragment(randomness.choice(values), randomness) for _ in range(64)]
    return lambda: session.get(f"{url}/search", params={"q": randomness.choice(texts)}, timeout=60)

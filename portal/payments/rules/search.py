"""Search: any fragment of an order number, operation id, address or transaction hash or id,
read from the mirror; a voucher by its exact id, asked of the API (vouchers are not mirrored).

A fragment is at least `MIN_FRAGMENT` characters, case-insensitive. Search first looks for it in
the merchant's newest `RECENT` rows of each kind: a text in many rows (the "ORD-" every order
number starts with) is found there at once, where an index lists every row that holds it (5.3 s
on PostgreSQL for "ORD-" among 2 x 1,000,000 operations). A rarer text, found fewer than
`LIMIT` + 1 times there, is asked of the index. A plain LIKE '%…%' would read every mirrored row
of the merchant, so migration 0014 gives each database a substring index: on SQLite FTS5 tables
with the trigram tokenizer (queried with MATCH), on PostgreSQL trigram indexes of the lower-cased
columns (used by LIKE; without pg_trgm the same LIKE reads the rows). A shorter text can still
be a whole id: that is looked up exactly.

Both substring indexes hold every merchant's rows. SQLite's reads each trigram's list of rows
in full for each trigram of a phrase: `"000…"` of 255 characters read the lists of "000" 253
times, of every merchant (1.2 s beside another merchant's 200,000 rows). So on either database a
merchant with few rows of a kind (`SCAN_AT_MOST`) is searched in its own rows, and on SQLite a
phrase is asked of the index for its first `MAX_PHRASE` characters only, the rest checked on the
rows found. The newest of the matches are chosen through an index of each row's merchant and
creation time (migration 0034): reading the rows themselves for that, scattered through a large
file, was most of a search's time.

Mirrored rows are inserted with `insert_searchable`, which puts them in SQLite's FTS tables in
the same transaction (migration 0037: a trigger per row cost three times as much); updates and
deletes reach them by triggers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy.orm import defer

from portal.api import ApiRefusal, ErrorCode, MerchantApiClient, Voucher
from portal.extensions import db
from portal.payments.models import MirroredOperation, MirroredTransaction

Row = TypeVar("Row", MirroredOperation, MirroredTransaction)
MIN_FRAGMENT = 3
MAX_QUERY = 255
LIMIT = 50
# A merchant with at most this many rows of a kind is searched by reading them (some 8 ms): the
# others' rows then cost nothing. A larger one is searched through the substring indexes.
SCAN_AT_MOST = 10_000
# The merchant's newest rows of a kind looked through before any index (a few ms).
RECENT = 1_000
# The longest phrase asked of SQLite's FTS index (each of its trigrams reads a list of rows).
MAX_PHRASE = 24
# What the API's ids look like (the list filters' own pattern): anything else is no voucher id.
VOUCHER_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
# The FTS5 table of each mirrored table on SQLite (migration 0014), rowid = the row's id.
FTS_TABLES = {
    MirroredOperation: "mirrored_operations_search",
    MirroredTransaction: "mirrored_transactions_search",
}
SEARCHED_COLUMNS = {
    MirroredOperation: (
        MirroredOperation.order_id,
        MirroredOperation.operation_id,
        MirroredOperation.address,
    ),
    MirroredTransaction: (MirroredTransaction.tx_id, MirroredTransaction.transaction_id),
}
IDS = {
    MirroredOperation: MirroredOperation.operation_id,
    MirroredTransaction: MirroredTransaction.transaction_id,
}


# Rows put in an FTS table with one statement (SQLite allows 999 parameters per statement).
INDEX_CHUNK = 500


def insert_searchable(model: type[Row], rows: Sequence[dict[str, Any]]) -> None:
    """Insert these rows of a mirrored table (one executemany), and on SQLite put them in its
    FTS table, in the same transaction; the caller commits. PostgreSQL's trigram indexes keep
    themselves."""
    if not rows:  # an empty executemany would insert one row of defaults
        return
    table = cast(sa.Table, model.__table__)
    if db.session.get_bind().dialect.name != "sqlite":
        db.session.execute(sa.insert(table), rows)
        return
    ids = db.session.scalars(sa.insert(table).returning(table.c.id), rows).all()
    columns: tuple[Any, ...] = SEARCHED_COLUMNS[model]
    names = ["rowid", *(column.key for column in columns)]
    fts = sa.table(FTS_TABLES[model], *(sa.column(name) for name in names))
    for start in range(0, len(ids), INDEX_CHUNK):
        inserted = sa.select(model.id, *columns).where(
            model.id.in_(ids[start : start + INDEX_CHUNK])
        )
        db.session.execute(sa.insert(fts).from_select(names, inserted))


@dataclass(frozen=True)
class Found:
    """At most `LIMIT` rows of each kind, newest first; `more_…` when there were others."""

    operations: list[MirroredOperation]
    transactions: list[MirroredTransaction]
    more_operations: bool
    more_transactions: bool


def search_mirror(merchant_id: int, text: str) -> Found:
    """The merchant's mirrored operations and transactions that `text` is part of."""
    operations = _matching(MirroredOperation, merchant_id, text)
    transactions = _matching(MirroredTransaction, merchant_id, text)
    return Found(
        operations[:LIMIT], transactions[:LIMIT], len(operations) > LIMIT, len(transactions) > LIMIT
    )


def _matching(model: type[Row], merchant_id: int, text: str) -> list[Row]:
    if len(text) < MIN_FRAGMENT:
        exact = model.merchant_id == merchant_id, IDS[model] == text
        return list(db.session.scalars(_shown(model).where(*exact).limit(LIMIT + 1)))
    recent = _recent_matching(model, merchant_id, text) if text.isascii() else []
    if len(recent) > LIMIT:
        return recent
    if not _more_rows_than(model, merchant_id, SCAN_AT_MOST):
        return _like_matching(model, merchant_id, text, by_trigrams=False)
    if db.session.get_bind().dialect.name == "sqlite":
        return _fts_matching(model, merchant_id, text)
    return _like_matching(model, merchant_id, text, by_trigrams=_trigram_indexed(model))


def _recent_matching(model: type[Row], merchant_id: int, text: str) -> list[Row]:
    """The rows among the merchant's newest `RECENT` that hold `text`, newest first (at most
    `LIMIT` + 1). When there are more than `LIMIT`, they are the newest of all that hold it.

    The newest rows are a subquery with its own LIMIT, which neither database merges into the
    query around it: the text is looked for in those rows alone, not through the index. ASCII
    texts only: SQLite's `lower` folds no other letters, where its FTS index does."""
    columns = SEARCHED_COLUMNS[model]
    recent = (
        sa.select(model.id, model.created_at, *columns)
        .where(model.merchant_id == merchant_id)
        .order_by(model.created_at.desc(), model.id.desc())
        .limit(RECENT)
        .subquery()
    )
    newest = (
        sa.select(recent.c.id)
        .where(_holds([recent.c[column.key] for column in columns], text))
        .order_by(recent.c.created_at.desc(), recent.c.id.desc())
        .limit(LIMIT + 1)
    )
    return _newest_first(model, newest.scalar_subquery())


def _holds(columns: Sequence[Any], text: str) -> sa.ColumnElement[bool]:
    """Whether one of these columns holds `text`, in any case."""
    pattern = "%" + re.sub(r"([\\%_])", r"\\\1", text.lower()) + "%"
    return sa.or_(*(sa.func.lower(column).like(pattern, escape="\\") for column in columns))


def _more_rows_than(model: type[Row], merchant_id: int, count: int) -> bool:
    """Whether the merchant has more than `count` rows of `model` (at most that many counted)."""
    some = sa.select(model.id).where(model.merchant_id == merchant_id).limit(count + 1)
    counted = db.session.scalar(sa.select(sa.func.count()).select_from(some.subquery()))
    return (counted or 0) > count


def _like_matching(
    model: type[Row], merchant_id: int, text: str, *, by_trigrams: bool
) -> list[Row]:
    """`lower(column) LIKE` over the merchant's rows, for the database to find through the
    index of each merchant's rows (without the merchant in the statement, a search of 20 rows
    read another merchant's 300,000 matches); or, `by_trigrams`, through PostgreSQL's trigram
    indexes alone, the merchant checked on the rows they found (`merchant_id + 0`, which no
    index serves). For a large merchant, PostgreSQL misjudged how many rows a few digits are in
    and intersected the trigram indexes' matches with the merchant's million entries in its
    index, which cost more than reading the matches themselves (docs/performance.md, "Seventh
    run").

    The matches are found first (a materialized CTE), then sorted: otherwise PostgreSQL may walk
    the merchant's rows newest first until 51 match, which reads them all for a rare text. They
    are sorted by their ids and times alone, and only the newest are read whole: reading every
    match's row with its record again to sort them was a third of a search for four digits of
    an id among 2 x 1,000,000 operations on PostgreSQL.
    """
    merchant = model.merchant_id + sa.literal_column("0") if by_trigrams else model.merchant_id
    matching = (
        sa.select(model.id, model.created_at)
        .where(merchant == merchant_id, _holds(SEARCHED_COLUMNS[model], text))
        .cte("matching")
        .prefix_with("MATERIALIZED", dialect="postgresql")
    )
    newest = (
        sa.select(matching.c.id)
        .order_by(matching.c.created_at.desc(), matching.c.id.desc())
        .limit(LIMIT + 1)
    )
    return _newest_first(model, list(db.session.scalars(newest)))


def _trigram_indexed(model: type[Row]) -> bool:
    """Whether PostgreSQL holds the trigram indexes of `model` (migration 0014 makes them where
    pg_trgm can be had; without them a search reads the rows, the merchant's through its
    index)."""
    name = f"ix_{model.__tablename__}_{SEARCHED_COLUMNS[model][0].key}_trigram"
    return bool(db.session.scalar(sa.text("SELECT to_regclass(:name) IS NOT NULL"), {"name": name}))


def _fts_matching(model: type[Row], merchant_id: int, text: str) -> list[Row]:
    """SQLite: the rows whose FTS5 trigrams hold `text` as a phrase (a substring, any case); of
    a text longer than MAX_PHRASE, the index finds its start and each row found is checked for
    the whole of it.

    `CROSS JOIN` makes SQLite read the FTS table first: otherwise it walks the merchant's rows
    newest first (for the ORDER BY) and looks each up in the match, which reads them all. The
    newest matches' ids come from the order index alone; then only their rows are read.
    """
    search, table = FTS_TABLES[model], model.__tablename__
    whole = ""
    if len(text) > MAX_PHRASE:
        checks = (f"instr(lower({table}.{c.key}), lower(:text))" for c in SEARCHED_COLUMNS[model])
        whole = f"AND ({' OR '.join(checks)}) "
    newest = sa.text(
        f"SELECT {table}.id FROM {search} CROSS JOIN {table} INDEXED BY ix_{table}_search_order "  # noqa: S608  (fixed names)
        f"ON {table}.id = {search}.rowid "
        f"WHERE {search} MATCH :phrase AND {table}.merchant_id = :merchant_id {whole}"
        f"ORDER BY {table}.created_at DESC, {table}.id DESC LIMIT :limit"
    ).bindparams(
        phrase='"' + text[:MAX_PHRASE].replace('"', '""') + '"',  # its trigrams in a row
        merchant_id=merchant_id,
        limit=LIMIT + 1,
    )
    if whole:
        newest = newest.bindparams(text=text)
    return _newest_first(model, list(db.session.scalars(newest)))


def _newest_first(model: type[Row], ids: list[int] | sa.ScalarSelect[int]) -> list[Row]:
    """The rows of these ids (found already, or by a subquery of the same statement), newest
    first."""
    rows = _shown(model).where(model.id.in_(ids))
    return list(db.session.scalars(rows.order_by(model.created_at.desc(), model.id.desc())))


def _shown(model: type[Row]) -> sa.Select[Row]:
    """The rows as the results show them: without their records (a kilobyte of JSON each, which
    the page never reads)."""
    return sa.select(model).options(defer(model.record, raiseload=True))


def find_voucher(api: MerchantApiClient, text: str) -> list[Voucher]:
    """The voucher whose id is exactly `text`, as a list of it or of none."""
    if not VOUCHER_ID.fullmatch(text):
        return []
    try:
        return [api.get_voucher(text)]
    except ApiRefusal as refusal:
        if refusal.code != ErrorCode.VOUCHER_NOT_FOUND:
            raise
        return []

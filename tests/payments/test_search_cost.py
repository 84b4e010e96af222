"""Search on SQLite beside another merchant's rows: the FTS index holds every merchant's, and a
text of a common trigram repeated (`"0" * 255`) read its list of rows once per repetition (1.2 s
beside 200,000 rows). What each search asks the database is checked, not its time."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import sqlalchemy as sa

from tests.support.forms import signed_in
from tests.support.mirror_rows import (
    mirror,
    mirror_all,
    operation_columns,
    operation_record,
    transaction_record,
)
from tests.support.statements import recorded_queries


def fill(app, merchant: str, order_ids: list[str]) -> None:
    """Mirror one operation of `merchant` per order number, in one statement."""
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.payments.models import MirroredOperation
    from portal.payments.rules import search

    with app.app_context():
        owner = merchant_named(merchant).id
        rows = [operation_columns(owner, operation_record(order_id=order)) for order in order_ids]
        search.insert_searchable(MirroredOperation, rows)
        db.session.commit()


def found(client, text: str) -> list[str]:
    answer = client.get("/search", query_string={"q": text})
    assert answer.status_code == 200
    main = answer.get_data(as_text=True).split('<main id="main">')[1]
    return re.findall(r'href="/operations/([^"]+)"', main)


def test_a_merchant_with_few_rows_is_searched_in_its_own_rows_only(app, accounts):
    fill(app, "Other", ["0" * 60 + str(number) for number in range(2000)])
    mine = mirror(app, operation_record(order_id="0" * 40 + "-mine"))
    client = signed_in(app, accounts.owner)
    with recorded_queries(app) as seen:
        assert found(client, "0" * 255) == []
        assert found(client, "0" * 40) == [mine["id"]]
    assert not [statement for statement, _ in seen if "MATCH" in statement]


def test_a_merchant_with_many_rows_asks_the_index_for_the_start_of_a_long_text(
    app, accounts, monkeypatch
):
    from portal.payments.rules import search

    monkeypatch.setattr(search, "SCAN_AT_MOST", 5)  # Other's 100 rows are many
    orders = ["0" * 40 + str(number) for number in range(100)]
    fill(app, "Other", orders)
    fill(app, "Acme", ["0" * 40 + "7-ours"] * 6)
    text = "0" * 35 + "7"  # its first 24 characters are in every order number; all of it in 11
    with recorded_queries(app) as seen:
        theirs = found(signed_in(app, accounts.other_owner), text)
    phrases = [parameters for statement, parameters in seen if "MATCH" in statement]
    assert phrases and all('"' + "0" * search.MAX_PHRASE + '"' in str(p) for p in phrases)
    assert len(theirs) == len([order for order in orders if text in order]) == 11

    ours = found(signed_in(app, accounts.owner), text)
    assert len(ours) == 6 and not set(ours) & set(theirs)


def searched_for_sixty_matches(app, accounts) -> list[tuple[str, object]]:
    """Acme's 60 operations whose order numbers, and transactions whose hashes, hold "ord-7",
    searched for it: the statements the search sent, once the page listed 50 of each kind."""
    from portal.payments.rules import search

    mirror_all(
        app,
        [
            operation_record(
                order_id=f"ORD-7{number:03d}",
                transactions=[transaction_record(tx_id=f"ord-7{number:03d}-{'0' * 56}")],
            )
            for number in range(60)
        ],
    )
    with recorded_queries(app) as seen:
        answer = signed_in(app, accounts.owner).get("/search", query_string={"q": "ord-7"})
    assert answer.status_code == 200
    page = answer.get_data(as_text=True)
    assert len(re.findall(r'href="/operations/\d+"', page)) >= search.LIMIT
    assert len(re.findall(r'href="/transactions/\d+"', page)) == search.LIMIT
    return seen


def test_the_newest_matches_are_chosen_without_reading_the_rows_of_the_others(
    app, accounts, monkeypatch
):
    """The index finds every merchant's rows that hold a fragment; choosing the merchant's
    newest 51 reads the order index (migration 0034), not each match's row with its record: at
    a million operations those rows, scattered through the file, took most of a search's time.
    Only the rows shown are read, of operations and transactions alike."""
    from portal.extensions import db
    from portal.payments.rules import search

    monkeypatch.setattr(search, "SCAN_AT_MOST", 5)
    monkeypatch.setattr(search, "RECENT", 5)  # too few of the newest hold it: the index answers
    fill(app, "Other", [f"ORD-7{number:03d}" for number in range(100)])
    seen = searched_for_sixty_matches(app, accounts)
    matches = [(sql, parameters) for sql, parameters in seen if "MATCH" in sql]
    assert len(matches) == 2  # operations, transactions
    with app.app_context():
        for sql, parameters in matches:
            explained = db.session.connection().exec_driver_sql(
                f"EXPLAIN QUERY PLAN {sql}", parameters
            )
            plan = [row[-1] for row in explained]
            read = [line for line in plan if re.search(r"\bmirrored_\w+ USING", line)]
            assert read and all("COVERING INDEX ix_mirrored_" in line for line in read), plan
    for table in ("mirrored_operations", "mirrored_transactions"):
        by_id = [
            parameters for sql, parameters in seen if f"FROM {table} \nWHERE {table}.id IN (" in sql
        ]
        # The newest rows looked through first, then the rows the index chose, by their ids.
        assert len(by_id) == 2 and len(by_id[-1]) == search.LIMIT + 1, (table, by_id)


def test_only_the_matches_shown_are_read_whole(each_database, app, accounts, monkeypatch):
    """Through PostgreSQL's trigram indexes, or a small merchant's own rows, the matches are
    sorted by their ids and times alone, and only the 51 shown are read, without their records:
    reading every match's row again to sort it was a third of a search by four digits of an id
    among 2 x 1,000,000 operations on PostgreSQL."""
    from portal.payments.rules import search

    monkeypatch.setattr(search, "RECENT", 5)  # too few of the newest hold it: the index answers
    seen = searched_for_sixty_matches(app, accounts)
    sorting = [sql for sql, _ in seen if "LIKE" in sql and "matching" in sql]
    assert len(sorting) == 2 and not [sql for sql in sorting if ".record" in sql], sorting
    # The merchant is in the statement that finds the matches: without it, a merchant of 20
    # rows searching a text of another's 300,000 read all of them (0.3 -> 498 ms, PostgreSQL).
    finding = [sql.split("SELECT matching.id")[0] for sql in sorting]
    assert all(re.search(r"WHERE mirrored_\w+\.merchant_id = ", sql) for sql in finding), sorting
    for table in ("mirrored_operations", "mirrored_transactions"):
        by_id = [
            (sql, parameters)
            for sql, parameters in seen
            if f"FROM {table} \nWHERE {table}.id IN (" in sql
        ]
        assert len(by_id) == 2 and len(by_id[-1][1]) == search.LIMIT + 1, (table, by_id)
        assert not [sql for sql, _ in by_id if f"{table}.record" in sql], "records read"


def newest_holding(records: list[dict], text: str) -> list[str]:
    """The ids of the newest `LIMIT` of `records` whose order number holds `text`, any case."""
    from portal.payments.rules import search

    holding = [r for r in records if text.lower() in r["order_id"].lower()]
    holding.sort(key=lambda r: (r["created_at"], int(r["id"])), reverse=True)
    return [r["id"] for r in holding[: search.LIMIT]]


def test_a_text_in_many_rows_is_found_among_the_newest_without_the_index(
    app, accounts, monkeypatch
):
    """ "ORD-", which every order number starts with, listed every row from the index and sorted
    them: 5.3 s on PostgreSQL, 0.27 s on SQLite among a million operations. It is found among
    the merchant's newest rows; a rarer text, too rare there, is still asked of the index."""
    from portal.payments.rules import search

    monkeypatch.setattr(search, "SCAN_AT_MOST", 5)
    monkeypatch.setattr(search, "RECENT", 80)
    records = [
        operation_record(order_id=f"ORD-{number:04d}", age=timedelta(minutes=number))
        for number in range(120)
    ]
    mirror_all(app, records)
    client = signed_in(app, accounts.owner)
    with recorded_queries(app) as seen:
        assert found(client, "ord-") == newest_holding(records, "ord-")
    assert not [statement for statement, _ in seen if "MATCH" in statement]
    with recorded_queries(app) as seen:
        assert found(client, "ORD-011") == newest_holding(records, "ORD-011")
    assert [statement for statement, _ in seen if "MATCH" in statement]


def test_the_newest_matches_are_the_same_whichever_way_they_are_found(
    each_database, app, accounts, monkeypatch
):
    """A text in more than `LIMIT` of the newest rows, in fewer, and in none of them: the page
    lists the newest `LIMIT` of all the rows that hold it, on both databases."""
    from portal.payments.rules import search

    monkeypatch.setattr(search, "RECENT", 60)
    # The newest 60 rows: 40 hold "-a-"; the 60 older: 40 hold "-a-", every one "-b-".
    records = [
        operation_record(
            order_id=f"ORD-{'a' if number % 3 else 'c'}-{'b-' if number >= 60 else ''}{number}",
            age=timedelta(minutes=number),
        )
        for number in range(120)
    ]
    mirror_all(app, records)
    client = signed_in(app, accounts.owner)
    for text in ("ord-", "-A-", "-b-", f"-{119}"):
        assert found(client, text) == newest_holding(records, text), text


def test_a_large_merchants_matches_are_told_from_the_others_on_their_rows(
    each_database, app, accounts, monkeypatch
):
    """Beyond `SCAN_AT_MOST` rows, PostgreSQL finds the matches through its trigram indexes and
    checks the merchant on the rows they found, by a condition no index serves: intersecting
    the matches with a large merchant's entries in the index of its rows cost most of a search
    at a million operations. A small merchant's rows may still be found through that index.
    SQLite asks its FTS index instead. Either way the page lists the same newest matches.
    (Acme's 40 operations are many here, its transactions, none, are few.)"""
    from portal.payments.rules import search

    monkeypatch.setattr(search, "RECENT", 5)  # too few of the newest hold it: the index answers
    monkeypatch.setattr(search, "SCAN_AT_MOST", 30)
    fill(app, "Other", [f"ORD-4711-{number}" for number in range(40)])
    records = [
        operation_record(order_id=f"ORD-{4711 if number % 2 else 815}-{number}",
                         age=timedelta(minutes=number))
        for number in range(40)
    ]  # fmt: skip
    mirror_all(app, records)
    client = signed_in(app, accounts.owner)
    with recorded_queries(app) as seen:
        assert found(client, "rd-4711") == newest_holding(records, "rd-4711")
    finding = [sql for sql, _ in seen if "LIKE" in sql and "matching" in sql]
    operations, transactions = (
        [sql for sql in finding if f"FROM {table}" in sql]
        for table in ("mirrored_operations", "mirrored_transactions")
    )
    assert transactions and not [sql for sql in transactions if "merchant_id + 0" in sql]
    if app.config["DATABASE_URL"].startswith("sqlite"):
        assert [sql for sql, _ in seen if "MATCH" in sql] and not operations, seen
        return
    assert operations and all("merchant_id + 0 = " in sql for sql in operations), finding

    monkeypatch.setattr(search, "SCAN_AT_MOST", 50)  # Acme's 40 operations are few
    with recorded_queries(app) as seen:
        assert found(client, "rd-4711") == newest_holding(records, "rd-4711")
    finding = [sql for sql, _ in seen if "LIKE" in sql and "matching" in sql]
    assert finding and not [sql for sql in finding if "merchant_id + 0" in sql], finding


@pytest.fixture
def without_trigram_indexes(portal_config, fresh_postgres_url) -> dict:
    """A PostgreSQL schema of the test's own, whose trigram indexes the test drops, as where
    pg_trgm cannot be had (migration 0014 then makes none)."""
    portal_config["DATABASE_URL"] = fresh_postgres_url
    return portal_config


def test_without_trigram_indexes_a_large_merchants_rows_are_read_through_its_index(
    without_trigram_indexes, app, accounts, monkeypatch
):
    """With no trigram index to find the matches, the merchant stays a condition its index
    serves: a check on every row would read every merchant's."""
    from portal.extensions import db
    from portal.payments.rules import search

    with app.app_context():
        for column in ("order_id", "operation_id", "address"):
            db.session.execute(sa.text(f"DROP INDEX ix_mirrored_operations_{column}_trigram"))
        db.session.commit()
    monkeypatch.setattr(search, "RECENT", 5)
    monkeypatch.setattr(search, "SCAN_AT_MOST", 30)
    records = [
        operation_record(order_id=f"ORD-4711-{number}", age=timedelta(minutes=number))
        for number in range(40)
    ]
    mirror_all(app, records)
    with recorded_queries(app) as seen:
        assert found(signed_in(app, accounts.owner), "rd-4711") == newest_holding(
            records, "rd-4711"
        )
    (finding,) = [sql for sql, _ in seen if "matching" in sql and "FROM mirrored_operations" in sql]
    assert "merchant_id = " in finding and "merchant_id + 0" not in finding, finding

"""/attention: what waits for a decision, from the mirror; the actions reach the real sandbox.

The mirror's rows are written here as the sync would write them (tests/support/mirror_rows.py);
for the actions, a real sandbox operation is copied into the mirror.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from portal.api import MerchantApiClient
from portal.payments.models import MirroredTransaction
from tests.support.forms import signed_in
from tests.support.mirror_rows import (
    mirror,
    mirror_all,
    mirror_from_sandbox,
    operation_record,
    transaction_record,
)
from tests.support.money import post
from tests.support.portal_app import email
from tests.support.statements import recorded_queries, statements_of

REASONS = ("undecided", "late", "payment", "difference", "failed")


def section(page: str, reason: str) -> str:
    """The part of the page under one reason's heading."""
    found = re.search(
        rf'<section[^>]*aria-labelledby="reason-{reason}">(.*?)</section>', page, re.S
    )
    assert found, f"no section {reason}"
    return found.group(1)


def nav_count(page: str) -> str | None:
    """The figure next to "Needs attention" in the menu, None when there is none."""
    link = re.search(r'<nav class="main-nav".*?>Needs attention(.*?)</a>', page, re.S)
    assert link, "no Needs attention link in the menu"
    figure = re.search(r'<span class="badge[^"]*">([\d,]+\+?)</span>', link.group(1))
    return figure.group(1) if figure else None


@pytest.fixture
def acme(app, accounts):
    """The per-test portal (no API needed: the page reads the mirror), with Acme and Other."""
    return app


def test_each_reason_appears_and_what_needs_nothing_does_not(acme):
    undefined = transaction_record("0.03", "undefined")
    undecided = mirror(acme, operation_record("0.5", transactions=[undefined]))
    partly = mirror(
        acme, operation_record("0.5", amount_paid="0.2", transactions=[transaction_record("0.2")])
    )
    over = mirror(
        acme,
        operation_record(
            "0.5", "ETH", amount_paid="0.75", transactions=[transaction_record("0.75")]
        ),
    )
    late_payment = transaction_record("0.00012345")
    late = mirror(acme, operation_record("0.5", status="expired", transactions=[late_payment]))
    failed = mirror(acme, operation_record("12", "USDT", status="failed"))
    quiet = [
        mirror(
            acme,
            operation_record(
                status="confirmed", amount_paid="0.5", transactions=[transaction_record("0.5")]
            ),
        ),
        mirror(acme, operation_record()),  # new, nothing paid
        mirror(
            acme,
            operation_record(
                status="expired", transactions=[transaction_record(status="rejected")]
            ),
        ),
        mirror(acme, operation_record(status="failed", age=timedelta(days=30))),
        mirror(
            acme,
            operation_record(
                status="confirmed",
                amount_paid="0.5",
                transactions=[transaction_record("0.5", linked=True)],
            ),
        ),
    ]
    theirs = [
        mirror(
            acme, operation_record(transactions=[transaction_record(status="undefined")]), "Other"
        ),
        mirror(acme, operation_record(status="failed"), "Other"),
    ]
    page = signed_in(acme, email("accountant")).get("/attention").get_data(as_text=True)

    undecided_part = section(page, "undecided")
    assert f"Transaction {undefined['id']}" in undecided_part
    assert "0.03 BTC" in undecided_part
    assert f"Open operation {undecided['id']}" in undecided_part
    payment = section(page, "payment")
    assert f"Open operation {partly['id']}" in payment and "Partly paid" in payment
    assert "0.2 BTC" in payment and "-0.3 BTC" in payment
    difference = section(page, "difference")
    assert f"Open operation {over['id']}" in difference and "Overpaid" in difference
    assert "0.75 ETH" in difference and "+0.25 ETH" in difference
    late_part = section(page, "late")
    assert f"Transaction {late_payment['id']}" in late_part and "0.00012345 BTC" in late_part
    assert f"Open operation {late['id']}" in late_part
    assert f"Open operation {failed['id']}" in section(page, "failed")
    assert ">12 USDT<" in section(page, "failed")
    for record in quiet + theirs:
        assert record["id"] not in page, record
    assert re.search(r"<time [^>]*>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</time>", page)
    # The accountant reads: no button, no form posting anywhere.
    assert "<button" not in page.split('<main id="main">')[1]


def test_the_five_reasons_are_read_in_three_queries(each_database, acme):
    """Every query waits for the database server: the page reads the items of the five reasons
    and how many each holds in one query for the transactions and one for the operations, and
    the ids of the late operations whose transactions it shows, beside the signed-in session's
    query and the one of decisions the mirror has not seen."""
    mirror(acme, operation_record(transactions=[transaction_record(status="undefined")]))
    mirror(acme, operation_record(status="expired", transactions=[transaction_record()]))
    mirror(acme, operation_record(amount_paid="0.2", transactions=[transaction_record("0.2")]))
    over = transaction_record("0.75")
    mirror(acme, operation_record("0.5", amount_paid="0.75", transactions=[over]))
    mirror(acme, operation_record(status="failed"))
    client = signed_in(acme, email("operator"))
    client.get("/")  # the first page after signing in asks, once, for a time zone (a write)
    statements = statements_of(acme, client, "/attention")
    page = client.get("/attention").get_data(as_text=True)
    for reason in REASONS:
        assert "Open operation" in section(page, reason), reason
    assert len([statement for statement in statements if "mirrored_" in statement]) == 3
    assert len(statements) == 5, statements


def test_each_group_finds_its_rows_in_an_index_that_holds_what_it_reads(acme):
    """SQLite's plan of each group's newest rows: the mirror's tables are read through indexes
    that hold every column the group filters and sorts by (a row of the mirror, with its large
    record, is read only for the items shown), beside the partial index of the operations that
    money still waits on. Each group but the late transactions (found operation by operation)
    is read in the order it shows: its newest are the first entries read, not the end of a sort
    of the whole group (47 ms of CPU for 29,751 differences)."""
    import sqlalchemy as sa

    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.payments.rules import attention

    with acme.app_context():
        merchant_id = merchant_named("Acme").id
        for reason in attention.Reason:
            newest = attention.waiting(merchant_id, reason).limit(attention.SHOWN)
            sql = str(newest.compile(db.engine, compile_kwargs={"literal_binds": True}))
            plan = [row[-1] for row in db.session.execute(sa.text(f"EXPLAIN QUERY PLAN {sql}"))]
            for line in plan:
                if re.search(r"\bmirrored_(operations|transactions) USING", line):
                    assert "COVERING INDEX" in line or "_merchant_late" in line, (reason, plan)
            if reason is not attention.Reason.LATE:
                assert "USE TEMP B-TREE FOR ORDER BY" not in plan, (reason, plan)


def test_the_partial_indexes_take_the_states_the_list_asks_for():
    """The payments' and differences' partial indexes are written with the states the list
    takes (`attention.PAID_SHORT_OR_UNCONFIRMED`, `WRONG_AMOUNT`): a state added to one and not
    the other would leave the list unable to use its index."""
    from portal.payments.models import MirroredOperation
    from portal.payments.rules import attention

    def condition(name: str) -> str:
        (index,) = [i for i in MirroredOperation.__table__.indexes if i.name == name]
        where = index.dialect_options["sqlite"]["where"]
        assert str(where) == str(index.dialect_options["postgresql"]["where"])
        return str(where.compile(compile_kwargs={"literal_binds": True}))

    def states(values: tuple[str, ...]) -> str:
        return "mirrored_operations.state IN (" + ", ".join(f"'{v}'" for v in values) + ")"

    assert condition("ix_mirrored_operations_merchant_payment") == (
        "mirrored_operations.status = 'new' AND " + states(attention.PAID_SHORT_OR_UNCONFIRMED)
    )
    assert condition("ix_mirrored_operations_merchant_difference") == states(attention.WRONG_AMOUNT)


def test_a_due_in_another_currency_is_read_from_the_operations_rate(each_database, acme):
    """An operation priced in USD and paid in USDT is due at its rate: the list reads the API's
    record of such an operation only (the others' due is their amount)."""
    priced = mirror(
        acme,
        operation_record(
            "30000",
            "USD",
            amount_paid="0.2",
            rate="0.0000121",
            currency_paid="USDT",
            transactions=[transaction_record("0.2")],
        ),
    )
    page = signed_in(acme, email("operator")).get("/attention").get_data(as_text=True)
    payment = section(page, "payment")
    assert f"Open operation {priced['id']}" in payment
    assert "0.363 USDT" in payment and "at the operation's rate" in payment


def test_newest_first_and_in_the_users_zone(acme):
    from portal.extensions import db
    from portal.identity.models import User

    older = mirror(acme, operation_record(status="failed", age=timedelta(hours=5)))
    newer = mirror(acme, operation_record(status="failed", age=timedelta(hours=1)))
    with acme.app_context():
        user = db.session.query(User).filter_by(email=email("owner")).one()
        user.time_zone = "Europe/Berlin"
        db.session.commit()
    page = signed_in(acme, email("owner")).get("/attention").get_data(as_text=True)
    failed = section(page, "failed")
    assert failed.index(newer["id"]) < failed.index(older["id"])
    assert re.search(r"<time [^>]*>[\d: -]+ CES?T</time>", failed)
    assert "Times are in Europe/Berlin." in page


def test_the_menu_counts_what_needs_attention_for_every_role(acme):
    for role in ("owner", "operator", "accountant"):
        assert (
            nav_count(signed_in(acme, email(role)).get("/attention").get_data(as_text=True)) is None
        )
    mirror(acme, operation_record(transactions=[transaction_record(status="undefined")] * 1))
    mirror(acme, operation_record(status="failed"))
    mirror(acme, operation_record(status="failed"), "Other")
    for role in ("owner", "operator", "accountant"):
        client = signed_in(acme, email(role))
        assert (
            nav_count(
                client.get("/operations/new" if role != "accountant" else "/account").get_data(
                    as_text=True
                )
            )
            == "2"
        )


def failed_operations(app, count: int, merchant: str = "Acme") -> list[str]:
    """`count` operations that failed a minute apart, in the mirror; their ids, newest first."""
    records = [
        operation_record(status="failed", age=timedelta(minutes=minute))
        for minute in range(1, count + 1)
    ]
    return [record["id"] for record in mirror_all(app, records, merchant)]


def operations_listed(page: str) -> list[str]:
    return re.findall(r">Open operation (\w+)</a>", page)


def test_each_reason_shows_its_newest_and_its_own_list_shows_every_item_by_pages(acme):
    newest_first = failed_operations(acme, 53)
    theirs = failed_operations(acme, 2, "Other")
    client = signed_in(acme, email("accountant"))
    page = client.get("/attention").get_data(as_text=True)
    failed = section(page, "failed")
    assert "Failed in the last 7 days (53)" in page
    assert operations_listed(failed) == newest_first[:10]
    assert "The newest 10 are shown" in failed
    assert 'href="/attention?group=failed"' in failed
    assert "see them all" not in section(page, "undecided")  # nothing waits there

    first = client.get("/attention?group=failed").get_data(as_text=True)
    assert re.findall(r'<section[^>]*aria-labelledby="reason-(\w+)"', first) == ["failed"]
    assert "Failed in the last 7 days (53)" in first
    assert operations_listed(first) == newest_first[:50]
    assert 'rel="prev"' not in first
    next_url = re.search(r'rel="next" href="([^"]+)"', first).group(1).replace("&amp;", "&")
    last = client.get(next_url).get_data(as_text=True)
    assert operations_listed(last) == newest_first[50:]
    assert 'rel="next"' not in last
    back = re.search(r'rel="prev" href="([^"]+)"', last).group(1).replace("&amp;", "&")
    assert operations_listed(client.get(back).get_data(as_text=True)) == newest_first[:50]
    for their_id in theirs:
        assert their_id not in first + last
    assert '<a href="/attention">Everything that needs attention</a>' in first


def test_the_newest_late_transactions_are_found_among_the_operations_with_the_newest(
    each_database, acme
):
    """The list reads the newest late transactions from the operations whose newest waiting
    transaction is newest (`late_since`), not from all of them: whatever their times
    interleave, they are the first 10 of the group's own list, and one handled since the last
    sync leaves its place to the next ones."""
    import random

    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.payments.rules import attention, decisions

    randomness = random.Random(5)
    now = datetime.now(UTC)

    def late_payment() -> dict:
        moment = now - timedelta(minutes=randomness.randrange(1, 600))
        status = randomness.choice(["confirmed", "confirmed", "confirmed", "rejected"])
        stamp = moment.isoformat().replace("+00:00", "Z")
        return transaction_record(status=status, created_at=stamp, updated_at=stamp)

    records = [
        operation_record(
            status=randomness.choice(["expired", "canceled"]),
            transactions=[late_payment() for _ in range(randomness.randint(1, 4))],
        )
        for _ in range(30)
    ]
    mirror_all(acme, records)
    with acme.app_context():
        merchant_id = merchant_named("Acme").id

        def shown() -> list[str]:
            (late,) = [g for g in attention.needs_attention(merchant_id) if g.reason == "late"]
            db.session.rollback()
            return [item.transaction.transaction_id for item in late.items]

        def listed() -> list[str]:
            ids = db.session.scalars(attention.waiting(merchant_id, attention.Reason.LATE))
            rows = [db.session.get(MirroredTransaction, row_id) for row_id in ids]
            db.session.rollback()
            return [row.transaction_id for row in rows]

        everything = listed()
        assert len(everything) > attention.SHOWN * 2
        assert shown() == everything[: attention.SHOWN]
        operation_of = dict(
            db.session.execute(
                sa.select(MirroredTransaction.transaction_id, MirroredTransaction.operation_id)
            ).all()
        )
        handled = list(dict.fromkeys(operation_of[t] for t in everything))[:3]
        for operation_id in handled:  # each handled whole, as a cancel is
            decisions.record_handled(merchant_id, None, operation_id)
        db.session.commit()
        still = [t for t in everything if operation_of[t] not in handled]
        assert shown() == listed()[: attention.SHOWN] == still[: attention.SHOWN]


def test_the_late_transactions_shown_are_read_by_their_operations_ids(each_database, acme):
    """The statement that reads the newest late transactions names their operations (the 10
    whose newest waiting transaction is newest), read first: named by a subquery, they were a
    guess to PostgreSQL's planner, which walked every transaction of the merchant instead
    (seconds a page at a million operations)."""
    from portal.identity.rules.accounts import merchant_named
    from portal.payments.rules import attention

    now = datetime.now(UTC)
    records = [
        operation_record(
            status="expired",
            transactions=[
                transaction_record(
                    created_at=(now - timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")
                )
            ],
        )
        for minutes in range(1, 16)
    ]  # newest first
    mirror_all(acme, records)
    with acme.app_context():
        merchant_id = merchant_named("Acme").id
    with recorded_queries(acme) as seen, acme.app_context():
        groups = attention.needs_attention(merchant_id)
    (late,) = [group for group in groups if group.reason == "late"]
    newest = [record["id"] for record in records[: attention.SHOWN]]
    assert [item.transaction.operation_id for item in late.items] == newest
    (parameters,) = [
        parameters for sql, parameters in seen if "UNION ALL" in sql and "late" in str(parameters)
    ]
    values = parameters.values() if isinstance(parameters, dict) else parameters
    every_operation = {record["id"] for record in records}
    assert {value for value in values if value in every_operation} == set(newest), parameters


def test_a_reason_of_more_than_a_thousand_items_is_counted_up_to_a_thousand(each_database, acme):
    """The list counts each reason's items up to 1,001, as the portal's other long lists do,
    and so does the menu: exact up to 1,000, then "1,000+"."""
    failed_operations(acme, 1000)
    client = signed_in(acme, email("owner"))
    page = client.get("/attention").get_data(as_text=True)
    assert "Failed in the last 7 days (1,000)" in page
    assert nav_count(page) == "1,000"
    failed_operations(acme, 1)
    page = client.get("/attention").get_data(as_text=True)
    assert "Failed in the last 7 days (More than 1,000)" in page
    assert nav_count(page) == "1,000+"
    assert "(More than 1,000)" in client.get("/attention?group=failed").get_data(as_text=True)


def test_a_list_of_no_reason_is_not_found_and_a_cursor_not_written_here_shows_the_first_page(
    acme,
):
    newest_first = failed_operations(acme, 3)
    client = signed_in(acme, email("operator"))
    assert client.get("/attention?group=everything").status_code == 404
    answer = client.get("/attention?group=failed&after=not-a-cursor")
    assert answer.status_code == 200
    assert operations_listed(answer.get_data(as_text=True)) == newest_first


def test_settle_from_a_reasons_own_list_lands_on_that_list(acme):
    kept = mirror(
        acme,
        operation_record("0.5", amount_paid="0.75", transactions=[transaction_record("0.75")]),
    )
    over = mirror(
        acme,
        operation_record(
            "0.5", amount_paid="0.75", transactions=[transaction_record("0.75")], age=timedelta(0)
        ),
    )
    client = signed_in(acme, email("owner"))
    page = client.get("/attention?group=difference").get_data(as_text=True)
    assert '<input type="hidden" name="group" value="difference">' in page
    form = {"note": "Refunded by bank transfer", "group": "difference"}
    answer = post(client, f"/attention/{over['id']}/settle", form)
    assert answer.status_code == 302
    assert answer.headers["Location"].startswith("/attention?group=difference")
    landed = client.get(answer.headers["Location"]).get_data(as_text=True)
    assert re.findall(r'<section[^>]*aria-labelledby="reason-(\w+)"', landed) == ["difference"]
    assert operations_listed(section(landed, "difference")) == [kept["id"]]


# --- Actions on a real sandbox operation ------------------------------------------------------


@pytest.fixture(scope="module")
def sandbox(module_servers):
    return module_servers.sandbox()


@pytest.fixture(scope="module")
def connected(module_servers, sandbox):
    return module_servers.portal(sandbox)


def undecided_operation(connected, sandbox, paid: str = "0.5") -> tuple[str, str]:
    """A sandbox operation due 0.5 BTC with a transaction of `paid` of status undefined, copied
    into the mirror."""
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    operation = api.create_operation("0.5", "BTC", f"order-{uuid.uuid4().hex[:8]}")
    body = {"amount": paid, "tx_id": f"hash-{uuid.uuid4().hex}", "status": "undefined"}
    transaction = sandbox.control("POST", f"operations/{operation.id}/transactions", body)
    mirror_from_sandbox(connected, sandbox, operation.id)
    return operation.id, transaction.json()["data"]["id"]


def form_of(page: str, action: str) -> dict:
    """The fields of the form on `page` that posts to `action` (the transactions of one
    operation), with every transaction that the person may tick for it ticked."""
    for form_id, form in re.findall(
        rf'<form method="post" action="{re.escape(action)}" id="([^"]+)"[^>]*>(.*?)</form>',
        page,
        re.S,
    ):
        fields: dict = dict(
            re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]+)"', form)
        )
        fields["transaction_id"] = re.findall(
            rf'name="transaction_id" value="([^"]+)" form="{form_id}"', page
        )
        return fields
    raise AssertionError(f"no form to {action}")


def confirmation_of(page: str) -> tuple[str, dict]:
    """The confirmation on `page` and the fields its form sends."""
    found = re.search(r'<section class="card confirm".*?</section>', page, re.S)
    assert found, "no confirmation on the page"
    shown = found.group(0)
    fields: dict = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]+)"', shown))
    fields["transaction_id"] = re.findall(r'name="transaction_id" value="([^"]+)"', shown)
    return shown, fields


def on_the_list(page: str) -> bool:
    return "<h1>Needs attention</h1>" in page


def test_link_from_the_attention_list(connected, sandbox):
    from portal.extensions import db
    from portal.payments.models import MirroredOperation, MirroredTransaction

    operation_id, transaction_id = undecided_operation(connected, sandbox)
    operator = signed_in(connected, email("operator"))
    page = operator.get("/attention").get_data(as_text=True)
    action = f"/operations/{operation_id}/link-transactions"
    fields = form_of(section(page, "undecided"), action)
    assert fields["transaction_id"] == [transaction_id] and fields["from"] == "attention"
    count_before = int(nav_count(page) or 0)

    asked = operator.post(action, data=fields)  # as the browser sends it: the page asks first
    page = asked.get_data(as_text=True)
    assert asked.status_code == 200 and on_the_list(page)  # asked on the list itself
    shown, confirm = confirmation_of(page)
    assert "Link 1 transaction?" in shown and "autofocus" in shown
    assert confirm["from"] == "attention"
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    assert not api.get_operation(operation_id).transactions[0].linked
    done = operator.post(action, data=confirm)
    assert done.status_code == 302
    assert done.headers["Location"].partition("?")[0] == "/attention"
    operation = api.get_operation(operation_id)
    assert operation.status == "confirmed" and operation.transactions[0].linked

    # Gone at once, before the mirror's next sync, and the menu counts one less.
    page = operator.get(done.headers["Location"]).get_data(as_text=True)
    assert "1 transaction linked to the operation." in page
    assert f"Transaction {transaction_id}" not in page
    assert int(nav_count(page) or 0) == count_before - 1
    # Once the mirror knows (its next sync), the mirror's own rows keep it away.
    with connected.app_context():
        for model in (MirroredTransaction, MirroredOperation):
            db.session.query(model).filter_by(operation_id=operation_id).delete()
        db.session.commit()
    mirror_from_sandbox(connected, sandbox, operation_id)
    assert f"Transaction {transaction_id}" not in operator.get("/attention").get_data(as_text=True)


def test_link_below_the_due_from_the_list_takes_the_tick_and_lands_on_the_next_item(
    connected, sandbox
):
    operation_id, transaction_id = undecided_operation(connected, sandbox, paid="0.1")
    undecided_operation(connected, sandbox)  # a next item
    operator = signed_in(connected, email("operator"))
    page = operator.get("/attention").get_data(as_text=True)
    action = f"/operations/{operation_id}/link-transactions"
    fields = form_of(section(page, "undecided"), action)
    count_before = int(nav_count(page) or 0)

    shown, confirm = confirmation_of(operator.post(action, data=fields).get_data(as_text=True))
    assert re.search(r"<dt>Due</dt><dd>0.5 BTC</dd>", shown)
    assert re.search(r"<dt>Received after linking</dt><dd>0.1 BTC", shown)
    assert "0.4 BTC short of the due (shortfall)" in shown
    assert "Yes, accept an underpayment of 0.4 BTC" in shown
    next_item = confirm["next_item"]
    assert re.fullmatch(r"item-t-\d+", next_item)

    refused = operator.post(action, data=confirm)  # without the tick: refused, on the list
    page = refused.get_data(as_text=True)
    assert refused.status_code == 422 and on_the_list(page)
    assert "Tick the box to confirm" in confirmation_of(page)[0]
    assert sandbox.requests_received("PUT", f"/operations/{operation_id}/link-transactions") == 0
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    assert api.get_transaction(transaction_id).linked is False

    done = operator.post(action, data={**confirm, "accept_underpayment": "y"})
    assert done.status_code == 302
    assert done.headers["Location"] == f"/attention?focus={next_item}"
    page = operator.get(done.headers["Location"]).get_data(as_text=True)
    assert "1 transaction linked to the operation." in page
    assert f"Transaction {transaction_id}" not in page
    assert re.search(rf'id="{next_item}" autofocus>Transaction \w+<', page)
    assert int(nav_count(page) or 0) == count_before - 1
    assert api.get_operation(operation_id).status == "confirmed"


def test_link_from_a_reasons_own_list_confirms_and_lands_on_that_list(connected, sandbox):
    operation_id, transaction_id = undecided_operation(connected, sandbox)
    operator = signed_in(connected, email("operator"))
    page = operator.get("/attention?group=undecided").get_data(as_text=True)
    action = f"/operations/{operation_id}/link-transactions"
    fields = form_of(section(page, "undecided"), action)
    assert fields["group"] == "undecided"

    shown, confirm = confirmation_of(operator.post(action, data=fields).get_data(as_text=True))
    assert confirm["group"] == "undecided"
    assert 'href="/attention?group=undecided">Back</a>' in shown
    done = operator.post(action, data=confirm)
    assert done.status_code == 302
    assert done.headers["Location"].startswith("/attention?group=undecided")
    page = operator.get(done.headers["Location"]).get_data(as_text=True)
    assert re.findall(r'<section[^>]*aria-labelledby="reason-(\w+)"', page) == ["undecided"]
    assert f"Transaction {transaction_id}" not in page


def test_link_from_the_list_in_place_with_htmx(connected, sandbox):
    operation_id, transaction_id = undecided_operation(connected, sandbox)
    undecided_operation(connected, sandbox)  # a next item
    operator = signed_in(connected, email("operator"))
    page = operator.get("/attention").get_data(as_text=True)
    action = f"/operations/{operation_id}/link-transactions"
    fields = form_of(section(page, "undecided"), action)
    asked = operator.post(action, data=fields, headers={"HX-Request": "true"})
    fragment = asked.get_data(as_text=True)
    assert asked.status_code == 200 and fragment.lstrip().startswith('<div id="queue">')
    shown, confirm = confirmation_of(fragment)
    assert 'hx-target="#queue"' in shown

    done = operator.post(action, data=confirm, headers={"HX-Request": "true"})
    fragment = done.get_data(as_text=True)
    assert done.status_code == 200 and fragment.lstrip().startswith('<div id="queue">')
    assert "1 transaction linked to the operation." in fragment
    assert f"Transaction {transaction_id}" not in fragment
    assert f'id="{confirm["next_item"]}" autofocus' in fragment


def test_an_unknown_from_lands_on_the_operation_page(connected, sandbox):
    """`from` names a page the portal knows; anything else is the operation page (no address
    taken from the request)."""
    operation_id, transaction_id = undecided_operation(connected, sandbox)
    owner = signed_in(connected, email("owner"))
    data = {"transaction_id": [transaction_id], "confirm": "1", "from": "https://evil.test/"}
    done = post(owner, f"/operations/{operation_id}/link-transactions", data)
    assert done.status_code == 302
    assert done.headers["Location"] == f"/operations/{operation_id}"


def test_reject_from_the_attention_list_sends_the_reason(connected, sandbox):
    operation_id, transaction_id = undecided_operation(connected, sandbox)
    owner = signed_in(connected, email("owner"))
    action = f"/operations/{operation_id}/reject-transactions"
    page = owner.get("/attention").get_data(as_text=True)
    fields = form_of(page, action.replace("reject", "link"))  # one form, two buttons
    assert transaction_id in fields["transaction_id"]
    assert re.search(r'<label for="reason-act-[\w-]+">Reason</label>', page)

    without = owner.post(action, data={**fields, "transaction_id": [transaction_id]})
    page = without.get_data(as_text=True)
    assert without.status_code == 422 and on_the_list(page)
    assert "Enter the reason for the rejection." in page

    asked = owner.post(
        action, data={**fields, "transaction_id": [transaction_id], "reason": "Not our customer"}
    )
    page = asked.get_data(as_text=True)
    assert on_the_list(page)
    shown, confirm = confirmation_of(page)
    assert "Reject 1 transaction?" in shown and "Not our customer" in shown
    done = owner.post(action, data=confirm)
    assert done.status_code == 302
    assert done.headers["Location"].partition("?")[0] == "/attention"
    assert "1 transaction rejected." in owner.get(done.headers["Location"]).get_data(as_text=True)
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    transaction = api.get_operation(operation_id).transactions[0]
    assert (transaction.status, transaction.reject_reason) == ("rejected", "Not our customer")


def test_accountants_see_no_buttons_and_are_refused(connected, sandbox):
    operation_id, transaction_id = undecided_operation(connected, sandbox)
    accountant = signed_in(connected, email("accountant"))
    page = accountant.get("/attention").get_data(as_text=True)
    assert f"Transaction {transaction_id}" in page
    assert "link-transactions" not in page and "reject-transactions" not in page
    assert "your role reads this list" in page
    refused = post(
        accountant,
        f"/operations/{operation_id}/link-transactions",
        {"transaction_id": transaction_id, "confirm": "1"},
    )
    assert refused.status_code == 403
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    assert api.get_operation(operation_id).transactions[0].status == "undefined"


# --- Money that arrived wrong, and Mark as settled ---------------------------------------------


def confirmed_with(paid: str, due: str = "20", *, age: timedelta = timedelta(minutes=5)) -> dict:
    """A confirmed USDT operation due `due` that received `paid`."""
    return operation_record(
        due,
        "USDT",
        "confirmed",
        amount_paid=paid,
        transactions=[transaction_record(paid, linked=True)],
        age=age,
    )


def test_overpaid_and_accepted_underpaid_operations_wait_with_their_difference(acme):
    over = mirror(acme, confirmed_with("30"))
    under = mirror(acme, confirmed_with("15"))
    paid = mirror(acme, confirmed_with("20"))
    page = signed_in(acme, email("owner")).get("/attention").get_data(as_text=True)
    difference = section(page, "difference")
    assert "Overpaid, underpaid or paid late (2)" in page
    over_row = difference.split(f"Open operation {over['id']}")[1].split("</tr>")[0]
    assert "30 USDT" in over_row and "+10 USDT" in over_row and "Overpaid" in over_row
    under_row = difference.split(f"Open operation {under['id']}")[1].split("</tr>")[0]
    assert "15 USDT" in under_row and "-5 USDT" in under_row and "Underpaid" in under_row
    assert paid["id"] not in page


def test_a_new_connection_is_not_flooded_with_its_history(acme):
    from portal.database import utcnow
    from portal.extensions import db
    from portal.live.models import MirrorState

    # Updated 40 and 10 days ago (`age` is twice the time since the last update).
    old = mirror(acme, confirmed_with("30", age=timedelta(days=80)))
    recent = mirror(acme, confirmed_with("30", age=timedelta(days=20)))
    with acme.app_context():
        state = db.session.query(MirrorState).one()
        state.first_sync_at = utcnow() - timedelta(minutes=1)  # connected a minute ago
        db.session.commit()
    page = signed_in(acme, email("owner")).get("/attention").get_data(as_text=True)
    assert f"Open operation {recent['id']}" in section(page, "difference")
    assert old["id"] not in page

    with acme.app_context():  # connected 60 days ago: money since then is news
        db.session.query(MirrorState).one().first_sync_at = utcnow() - timedelta(days=60)
        db.session.commit()
    page = signed_in(acme, email("owner")).get("/attention").get_data(as_text=True)
    assert f"Open operation {old['id']}" in section(page, "difference")


def settle_url(record: dict) -> str:
    return f"/attention/{record['id']}/settle"


def settle_fields(page: str, record: dict) -> dict:
    """The hidden fields of the record's settle form on `page`, as the browser sends them."""
    form = page.split(f'action="{settle_url(record)}"')[1].split("</form>")[0]
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]+)"', form))


def settled_audit(app) -> list:
    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        return [
            (event.outcome, event.parameters)
            for event in db.session.query(AuditEvent).filter_by(action="operation.settle")
        ]


def test_mark_as_settled_with_a_note_until_more_money_arrives(acme):
    from portal.extensions import db
    from portal.payments.models import MirroredOperation

    over = mirror(acme, confirmed_with("30"))
    following = mirror(acme, confirmed_with("25"))
    owner = signed_in(acme, email("operator"))
    page = owner.get("/attention").get_data(as_text=True)
    assert nav_count(owner.get("/account").get_data(as_text=True)) == "2"
    assert f'action="{settle_url(over)}"' in page and 'name="note"' in page

    note = "Refunded 10 USDT by bank transfer"
    done = owner.post(settle_url(over), data={**settle_fields(page, over), "note": note})
    assert done.status_code == 302 and "focus=item-o-" in done.headers["Location"]
    page = owner.get(done.headers["Location"]).get_data(as_text=True)
    assert f"Operation {over['id']} marked as settled." in page
    assert over["id"] not in section(page, "difference")
    assert re.search(rf'id="item-o-\d+" autofocus>Open operation {following["id"]}<', page)
    assert nav_count(page) == "1"
    [(outcome, parameters)] = settled_audit(acme)
    assert outcome == "success"
    assert parameters["note"] == note
    assert (parameters["received"], parameters["difference"]) == ("30", "10")

    with acme.app_context():  # more money arrived: received changed, the item is back
        row = db.session.query(MirroredOperation).filter_by(operation_id=over["id"]).one()
        row.amount_paid, row.difference = Decimal("35"), Decimal("15")
        db.session.commit()
    assert f"Open operation {over['id']}" in section(
        owner.get("/attention").get_data(as_text=True), "difference"
    )


def test_settle_in_place_with_htmx(acme):
    over = mirror(acme, confirmed_with("30"))
    owner = signed_in(acme, email("owner"))
    done = post(owner, settle_url(over), {"note": "Kept as a tip"}, **{"HX-Request": "true"})
    assert done.status_code == 200
    fragment = done.get_data(as_text=True)
    assert fragment.lstrip().startswith("{#") is False and '<div id="queue">' in fragment
    assert "<html" not in fragment and over["id"] not in section(fragment, "difference")


def test_settle_without_a_note_is_refused_and_changes_nothing(acme):
    over = mirror(acme, confirmed_with("30"))
    owner = signed_in(acme, email("owner"))
    refused = post(owner, settle_url(over), {"note": "   "})
    assert refused.status_code == 422
    page = refused.get_data(as_text=True)
    assert "Enter a note: what was done about the difference." in page
    assert f"Open operation {over['id']}" in section(page, "difference")
    assert settled_audit(acme) == []
    assert f"Open operation {over['id']}" in owner.get("/attention").get_data(as_text=True)


def test_settle_needs_the_csrf_token(acme):
    over = mirror(acme, confirmed_with("30"))
    owner = signed_in(acme, email("owner"))
    refused = owner.post(settle_url(over), data={"note": "No token"})
    assert refused.status_code in (400, 422)
    assert settled_audit(acme) == []


def test_what_is_not_waiting_cannot_be_settled(acme):
    paid = mirror(acme, confirmed_with("20"))
    refused = post(signed_in(acme, email("owner")), settle_url(paid), {"note": "Why not"})
    assert refused.status_code == 409
    assert "no longer waits to be settled" in refused.get_data(as_text=True)
    [(outcome, _)] = settled_audit(acme)
    assert outcome == "refused"


def test_accountants_cannot_settle(acme):
    over = mirror(acme, confirmed_with("30"))
    accountant = signed_in(acme, email("accountant"))
    page = accountant.get("/attention").get_data(as_text=True)
    assert f"Open operation {over['id']}" in section(page, "difference")
    assert "/settle" not in page and "<textarea" not in page
    refused = post(accountant, settle_url(over), {"note": "I may not"})
    assert refused.status_code == 403
    assert settled_audit(acme) == []

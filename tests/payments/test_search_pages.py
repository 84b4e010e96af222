"""/search?q=: fragments of order numbers, ids, addresses and hashes from the mirror, vouchers by
id from a real sandbox; only the signed-in user's merchant's records, for every role."""

from __future__ import annotations

import re

import pytest

from portal.api import MerchantApiClient
from tests.support import factories
from tests.support.forms import signed_in
from tests.support.mirror_rows import mirror, operation_record, transaction_record
from tests.support.portal_app import email

HOSTILE = '<script>alert("order")</script>'


@pytest.fixture(scope="module")
def sandbox(module_servers):
    return module_servers.sandbox()


@pytest.fixture(scope="module")
def portal(module_servers, sandbox):
    application = module_servers.portal(sandbox)
    factories.user(application, "owner@other.test", "owner", merchant="Other")
    return application


@pytest.fixture(scope="module")
def records(portal):
    """Acme's operations (one with a hostile order number) and one of Other's."""
    paid = transaction_record("0.25", tx_id="0xFeedC0ffee" + "ab" * 27)
    return {
        "order": mirror(portal, operation_record(order_id="SHOP-2024-Kiwi-0042")),
        "address": mirror(portal, operation_record(address="bc1qzebraq3k9x7ylongaddress0000")),
        "paid": mirror(portal, operation_record(status="confirmed", transactions=[paid])),
        "hostile": mirror(portal, operation_record(order_id=HOSTILE)),
        "theirs": mirror(
            portal,
            operation_record(
                order_id="SHOP-2024-Kiwi-9999",
                transactions=[transaction_record(tx_id="0xFeedC0ffee" + "cd" * 27)],
            ),
            "Other",
        ),
    }


@pytest.fixture(scope="module")
def owner(portal):
    return signed_in(portal, email("owner"))


def results(client, text: str) -> str:
    answer = client.get("/search", query_string={"q": text})
    assert answer.status_code == 200
    return answer.get_data(as_text=True)


def links(page: str, kind: str) -> list[str]:
    """The ids of the records of `kind` the results link to."""
    return re.findall(rf'href="/{kind}/([^"]+)"', page.split('<main id="main">')[1])


def test_a_fragment_of_an_order_number_finds_it_in_any_case(owner, records):
    page = results(owner, "kiwi-00")
    assert links(page, "operations") == [records["order"]["id"]]
    assert "SHOP-2024-Kiwi-0042" in page


def test_a_fragment_of_an_address(owner, records):
    assert links(results(owner, "ZEBRAQ3K"), "operations") == [records["address"]["id"]]


def test_a_fragment_of_a_transaction_hash_finds_the_transaction(owner, records):
    page = results(owner, "feedc0ffeeabab")
    transaction = records["paid"]["transactions"][0]["id"]
    assert links(page, "transactions") == [transaction]
    assert f'href="/operations/{records["paid"]["id"]}"' in page  # its operation, one click away


def test_an_operation_id_and_a_part_of_it(owner, records):
    whole = records["address"]["id"]
    assert whole in links(results(owner, whole), "operations")
    assert whole in links(results(owner, whole[1:5]), "operations")


def test_a_voucher_by_its_id_from_the_sandbox(owner, sandbox):
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    voucher = api.create_voucher("15", "USDT")
    page = results(owner, voucher.id)
    assert links(page, "vouchers") == [voucher.id]
    assert "15 USDT" in page
    missing = results(owner, "987654321")
    assert links(missing, "vouchers") == []
    assert "No voucher has the id “987654321”." in missing


def test_a_short_text_says_so_and_finds_only_whole_ids(owner, records):
    page = results(owner, "Ki")
    assert "Type at least 3 characters" in page
    assert links(page, "operations") == []


def test_an_empty_and_a_too_long_text(owner):
    assert "Type at least 3 characters" in results(owner, "")
    assert owner.get("/search", query_string={"q": "x" * 256}).status_code == 422


def test_a_hostile_order_number_is_text(owner, records):
    page = results(owner, "script>")
    assert links(page, "operations") == [records["hostile"]["id"]]
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(&#34;order&#34;)&lt;/script&gt;" in page


def test_another_merchants_records_never_appear(portal, owner, records):
    page = results(owner, "feedc0ffee")
    assert records["theirs"]["transactions"][0]["id"] not in links(page, "transactions")
    assert records["theirs"]["id"] not in links(results(owner, "SHOP-2024"), "operations")
    theirs = results(signed_in(portal, "owner@other.test"), "SHOP-2024")
    assert links(theirs, "operations") == [records["theirs"]["id"]]


@pytest.mark.parametrize("role", ["owner", "operator", "accountant"])
def test_every_role_searches_and_opens_what_it_finds(portal, records, role):
    client = signed_in(portal, email(role))
    page = client.get("/").get_data(as_text=True)
    assert re.search(r'<form class="site-search" method="get" action="/search"', page)
    assert '<label for="site-search">Search</label>' in page
    found = results(client, "kiwi-0042")
    assert links(found, "operations") == [records["order"]["id"]]
    assert 'value="kiwi-0042"' in found  # the box keeps what was typed


def test_many_matches_are_limited_with_a_word_to_refine(portal, owner):
    for _ in range(51):
        mirror(portal, operation_record(order_id="BULK-order"))
    page = results(owner, "bulk-ord")
    assert len(links(page, "operations")) == 50
    assert "more match: type more of it to narrow the search" in page


def test_fragments_on_each_database_with_like_characters(each_database, app, accounts):
    """On PostgreSQL the fragment is a LIKE pattern: % and _ in it are the characters."""
    wanted = mirror(app, operation_record(order_id="Rate_100%-Off"))
    mirror(app, operation_record(order_id="Rate-1000-Off"))
    client = signed_in(app, accounts.owner)
    assert links(results(client, "e_100%"), "operations") == [wanted["id"]]
    assert links(results(client, "RATE_1"), "operations") == [wanted["id"]]


def test_another_merchants_rows_match_neither_a_fragment_nor_a_short_id(
    each_database, app, accounts
):
    """On each database: the fragment's query (FTS or LIKE) and the exact look-up of a text too
    short for a fragment both keep to the signed-in user's merchant."""
    theirs = mirror(
        app,
        operation_record(
            id="77",
            order_id="Shared-Kiwi-9",
            transactions=[transaction_record(id="78", tx_id="0xShared" + "ef" * 20)],
        ),
        "Other",
    )
    ours = mirror(app, operation_record(order_id="Shared-Kiwi-1"))
    client = signed_in(app, accounts.owner)
    assert links(results(client, "shared-kiwi"), "operations") == [ours["id"]]
    assert links(results(client, "0xshared"), "transactions") == []
    assert links(results(client, "77"), "operations") == []
    assert links(results(client, "78"), "transactions") == []
    other = signed_in(app, accounts.other_owner)
    assert links(results(other, "shared-kiwi"), "operations") == [theirs["id"]]
    assert links(results(other, "77"), "operations") == ["77"]
    assert links(results(other, "78"), "transactions") == ["78"]

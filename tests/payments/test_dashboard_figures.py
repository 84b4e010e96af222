"""The dashboard's operations from the mirror: sales counted by state when they were created, the
operations that are no sales apart with exact sums, over the period a person picks, in their
time zone; only their own merchant's operations. (Money: test_dashboard_money.py.)"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from portal.api import Operation
from portal.periods import Preset, preset_days
from tests.support import factories
from tests.support.dashboard import figure
from tests.support.forms import signed_in
from tests.support.mirror import merchant_id, mirror_operations
from tests.support.portal_app import connected_portal, email
from tests.support.statements import statements_of

MARCH = "/?from=2024-03-01&to=2024-03-31"


def made(
    number: int,
    status: str,
    currency: str,
    amount: str,
    at: datetime,
    paid: str | None = None,
    category: str = "application",
) -> Operation:
    return Operation(
        id=f"op-{number}", category=category, amount=Decimal(amount), fee=Decimal(0),
        rate=Decimal(1), currency=currency, currency_paid=currency, status=status,
        address="addr", created_at=at, updated_at=at,
        amount_paid=None if paid is None else Decimal(paid),
    )  # fmt: skip


@pytest.fixture
def app(tmp_path, sandbox):
    with connected_portal(tmp_path, sandbox) as application:
        yield application


@pytest.fixture(params=["sqlite", "postgresql"])
def any_app(request, tmp_path, sandbox):
    """The portal on SQLite and on PostgreSQL: each adds decimals its own way."""
    database = {}
    if request.param == "postgresql":
        database["DATABASE_URL"] = request.getfixturevalue("postgres_url")
    with connected_portal(tmp_path, sandbox, **database) as application:
        yield application


def rows(page: str, table_id: str) -> list[tuple[str, ...]]:
    """The body rows of the table with this id, as the page reads."""
    table = re.search(rf'<table id="{table_id}">.*?</table>', page, re.S).group(0)
    body = re.search(r"<tbody>(.*?)</tbody>", table, re.S).group(1)
    return [
        tuple(
            re.sub(r"<[^>]+>", "", cell).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)
        )
        for r in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]


def created(page: str) -> str:
    return figure(page, "figure-created")


def test_sales_are_counted_by_state_and_the_rest_apart(any_app):
    from portal.extensions import db
    from portal.money.models import CrossExchangeReference

    app = any_app
    march = datetime(2024, 3, 5, 12, tzinfo=UTC)
    mirror_operations(
        app,
        [
            made(1, "confirmed", "BTC", "0.1", march, paid="0.1"),
            made(2, "confirmed", "BTC", "0.2", march, paid="0.2"),
            made(3, "confirmed", "BTC", "1", march, paid="0.4"),  # underpaid, accepted
            made(4, "new", "BTC", "1", march, paid="1.5"),  # overpaid
            made(5, "new", "BTC", "1", march, paid="0.4"),  # partly paid: not paid yet
            made(6, "expired", "USDT", "5", march, paid="5"),  # paid late
            made(7, "expired", "USDT", "1000000.01", march),
            made(8, "confirmed", "BTC", "0.1", march, category="transfer"),
            made(9, "confirmed", "BTC", "0.2", march, category="internal_transfer"),
            made(10, "new", "ETH", "2.5", march),  # waits for a cross exchange's sold ETH
            made(11, "confirmed", "BTC", "9", datetime(2024, 4, 1, 12, tzinfo=UTC), paid="9"),
        ],
        synced_at=datetime(2024, 4, 2, 12, 4, 31, tzinfo=UTC),
    )
    mirror_operations(  # another merchant's, in the same period
        app, [made(12, "confirmed", "BTC", "500", march, paid="500")], merchant="Other"
    )
    with app.app_context():
        for number, operation_id in enumerate(("op-10", None)):  # None: made before ids were kept
            db.session.add(
                CrossExchangeReference(
                    merchant_id=merchant_id(app), cross_exchange_id=f"x-{number}",
                    operation_id=operation_id, sell_currency="ETH", buy_currency="BTC",
                    sell_amount=Decimal("2.5"), buy_amount=Decimal("0.1"),
                )
            )  # fmt: skip
        db.session.commit()
    page = signed_in(app, email("accountant")).get(MARCH).text
    assert created(page) == "7"
    assert (
        figure(page, "figure-paid") == "4 · 57.1 % of those created (paid, overpaid or underpaid)"
    )
    for state, count in (("underpaid", "1"), ("overpaid", "1"), ("paid_late", "1")):
        assert figure(page, f"figure-{state}") == count, state
    assert figure(page, "figure-awaiting_decision") == "0"
    assert rows(page, "not-sales") == [
        ("Cross exchanges", "ETH", "1", "2.5 ETH"),
        ("Withdrawals", "BTC", "2", "0.3 BTC"),  # 0.3 exactly, never 0.30000000000000004
    ]
    assert "Figures as of" in page and "2024-04-02 12:04:31 UTC" in page
    assert "2024-03-01 to 2024-03-31" in page
    assert "Operations counted when they were created" in page


def test_a_day_is_the_users_day(any_app):
    """23:30 UTC on 10 March is 00:30 on 11 March in Berlin: the 11th there, the 10th in UTC."""
    app = any_app
    mirror_operations(
        app, [made(1, "confirmed", "EUR", "7", datetime(2024, 3, 10, 23, 30, tzinfo=UTC))]
    )
    berlin = factories.user(app, "berlin@acme.test").email
    with app.app_context():
        from portal.extensions import db
        from portal.identity.models import User

        db.session.execute(
            db.update(User).where(User.email == berlin).values(time_zone="Europe/Berlin")
        )
        db.session.commit()
    in_berlin, in_utc = signed_in(app, berlin), signed_in(app, email("accountant"))
    for client, day, seen in (
        (in_berlin, "2024-03-11", "1"),
        (in_berlin, "2024-03-10", "0"),
        (in_utc, "2024-03-10", "1"),
        (in_utc, "2024-03-11", "0"),
    ):
        page = client.get(f"/?from={day}&to={day}").text
        assert created(page) == seen, (client is in_berlin, day)
    assert "calendar days in Europe/Berlin" in in_berlin.get("/?from=2024-03-11&to=2024-03-11").text
    # The bars too: a day in Berlin is read from the operations, a day in UTC from the totals.
    for client, bars in (
        (in_berlin, [("2024-03-09", "0"), ("2024-03-10", "0"), ("2024-03-11", "1")]),
        (in_utc, [("2024-03-09", "0"), ("2024-03-10", "1"), ("2024-03-11", "0")]),
    ):
        page = client.get("/?from=2024-03-09&to=2024-03-11").text
        assert re.findall(r"<title>([\d-]+): (\d+)</title>", page) == bars


@pytest.mark.parametrize(
    "query",
    ["from=2024-13-01&to=2024-03-31", "from=2024-03-31&to=2024-03-01", "from=2024-03-01",
     "period=forever", "from=1900-01-01&to=2024-01-01"],
)  # fmt: skip
def test_a_period_that_cannot_be_shown_says_so_and_shows_30_days(app, query):
    mirror_operations(app, [])
    answer = signed_in(app, email("owner")).get(f"/?{query}")
    assert answer.status_code == 200
    assert "That period cannot be shown" in answer.text
    assert '<h2 id="period-title">Last 30 days</h2>' in answer.text


def test_presets_are_bookmarkable_and_relative_to_today():
    today = date(2026, 3, 15)
    assert preset_days(Preset.TODAY, today) == (today, today)
    assert preset_days(Preset.SEVEN_DAYS, today) == (date(2026, 3, 9), today)
    assert preset_days(Preset.THIRTY_DAYS, today) == (date(2026, 2, 14), today)
    assert preset_days(Preset.THIS_MONTH, today) == (date(2026, 3, 1), today)
    assert preset_days(Preset.LAST_MONTH, today) == (date(2026, 2, 1), date(2026, 2, 28))
    assert preset_days(Preset.LAST_MONTH, date(2026, 1, 3)) == (
        date(2025, 12, 1),
        date(2025, 12, 31),
    )


def test_a_preset_link_shows_its_period(app):
    mirror_operations(app, [made(1, "confirmed", "BTC", "1", datetime.now(UTC))])
    client = signed_in(app, email("operator"))
    page = client.get("/").text
    assert 'href="/?period=last-month"' in page
    shown = client.get("/?period=today").text
    assert '<h2 id="period-title">Today</h2>' in shown and created(shown) == "1"
    assert created(client.get("/?period=last-month").text) == "0"
    assert '<details id="period-dates">' in shown  # presets first, the dates folded
    assert '<details id="period-dates" open>' in client.get(MARCH).text  # unfolded when typed


def test_before_the_first_sync_the_page_says_so_and_keeps_the_latest_operations(app, sandbox):
    page = signed_in(app, email("owner")).get("/").text
    assert "has not synced yet" in page
    assert "Latest operations" in page and "Daily volume" not in page


def test_a_long_period_has_a_bar_per_month(app):
    mirror_operations(app, [made(1, "confirmed", "BTC", "1", datetime(2024, 3, 5, tzinfo=UTC))])
    page = signed_in(app, email("owner")).get("/?from=2024-01-15&to=2024-12-31").text
    assert "Monthly volume" in page
    bars = re.findall(r"<title>([\d-]+): (\d+)</title>", page)
    assert bars[0] == ("2024-01-15", "0") and ("2024-03-01", "1") in bars and len(bars) == 12


def test_the_figures_cost_six_queries_beside_the_session(app):
    """When the mirror last synced comes with the signed-in session's one query. The money of
    March, a whole month, is one query of the ledger's totals, and of the period before it
    (January 30 to February 29: a whole month and two whole days) another: no movement read.
    The sales by state are one query of the operations' totals (no operation read); then one
    for the operations of cross exchanges, one for the withdrawals, one for the bars (from the
    operations' totals too).
    The balances shown to an owner add three: the openings, the totals, the latest rates."""
    march = datetime(2024, 3, 5, 12, tzinfo=UTC)
    mirror_operations(app, [made(1, "confirmed", "BTC", "0.1", march, paid="0.1")])
    owner = signed_in(app, email("owner"))
    assert created(owner.get(MARCH).text) == "1"  # the sign-in's message shown once
    statements = statements_of(app, owner, MARCH)
    assert len(statements) == 1 + 6 + 3, statements
    assert sum("FROM operation_totals" in statement for statement in statements) == 2
    assert sum("FROM ledger_totals" in statement for statement in statements) == 3
    assert sum("FROM ledger_entries" in statement for statement in statements) == 1
    assert "mirror_states" in statements[0] and "user_sessions" in statements[0]
    assert not any("mirror_states" in statement for statement in statements[1:])

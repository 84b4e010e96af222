"""A period's figures agree wherever they are read: the statement, the ledger's export (its
summary and its rows) and the dashboard count the same movements in a month, from its first
moment to the next month's, and a month's closing is the next one's opening. An opening
balance entered later changes no earlier month, mailed or not: before it, the balance is
derived from zero, and its effect is booked at its own moment."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from tests.support import factories
from tests.support.ledger import book
from tests.support.portal_app import MERCHANT, email

pytestmark = pytest.mark.usefixtures("each_database")  # every test on SQLite, then PostgreSQL

OCTOBER = (date(2026, 10, 1), date(2026, 10, 31))
NOVEMBER = (date(2026, 11, 1), date(2026, 11, 30))


@pytest.fixture
def merchant(app):
    factories.accounts(app)
    factories.api_connection(app)
    return app


def figures(app, month: tuple[date, date]) -> dict[str, object]:
    """BTC's figures of `month` (UTC) as each place reads them."""
    from portal.identity.rules import accounts
    from portal.payments.rules.dashboard import Period, summarise
    from portal.periods import Period as Days
    from portal.reports.rules import ledger_rows
    from portal.reports.rules.statement import Line, statement

    with app.app_context():
        found = accounts.merchant_named(MERCHANT)
        since, until = Days(*month, UTC).instants
        of_btc = statement(found, since, until).currencies[0]
        assert of_btc.currency == "BTC"
        summary = next(s for s in ledger_rows.summaries(found, since, until) if s.currency == "BTC")
        rows = [r for r in ledger_rows.ledger_rows(found, since, until) if r.currency == "BTC"]
        generation = found.api_connection.generation
        wallets = summarise(found.id, generation, "USD", Period(*month, UTC)).wallets
        lines = {figure.line: figure.amount for figure in of_btc.lines}
        return {
            "statement": (of_btc.opening, of_btc.closing),
            "statement adds up": of_btc.opening
            + sum(amount for line, amount in lines.items() if line is not Line.NET and amount)
            == of_btc.closing,
            "adjustments": lines[Line.ADJUSTMENTS],
            "received": lines[Line.RECEIVED],
            "export": (summary.opening, summary.closing),
            "export rows": [(r.type, r.net, r.balance_after) for r in rows],
            "dashboard received": next((w.received for w in wallets if w.currency == "BTC"), None),
        }


def test_a_movement_at_a_months_first_moment_is_the_new_months_everywhere(merchant):
    book(
        merchant,
        [
            ("payment", "BTC", Decimal("0.5"), datetime(2026, 10, 10, tzinfo=UTC)),
            ("payment", "BTC", Decimal("0.25"), datetime(2026, 11, 1, tzinfo=UTC)),
            ("payment", "BTC", Decimal("0.125"), datetime(2026, 11, 10, tzinfo=UTC)),
        ],
    )

    october, november = figures(merchant, OCTOBER), figures(merchant, NOVEMBER)

    assert october["statement"] == october["export"] == (0, Decimal("0.5"))
    assert november["statement"] == november["export"] == (Decimal("0.5"), Decimal("0.875"))
    assert october["received"] == october["dashboard received"] == Decimal("0.5")
    assert november["received"] == november["dashboard received"] == Decimal("0.375")
    assert october["statement adds up"] and november["statement adds up"]


def test_an_opening_entered_later_changes_no_month_before_it(merchant):
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.models import StatementMail
    from portal.money.rules import balances

    book(
        merchant,
        [
            ("payment", "BTC", Decimal("0.5"), datetime(2026, 10, 10, 9, tzinfo=UTC)),
            ("fee", "BTC", Decimal("-0.005"), datetime(2026, 10, 10, 9, tzinfo=UTC)),
            ("payment", "BTC", Decimal("0.1"), datetime(2026, 11, 2, tzinfo=UTC)),
        ],
    )
    mailed = figures(merchant, OCTOBER)
    with merchant.app_context():
        found = accounts.merchant_named(MERCHANT)
        owner = next(user for user in found.users if user.email == email("owner"))
        db.session.add(
            StatementMail(user_id=owner.id, period_start=OCTOBER[0], period_end=OCTOBER[1])
        )
        db.session.commit()
        last_moment = datetime(2026, 10, 31, 23, 59, 59, tzinfo=UTC)
        with pytest.raises(balances.BalanceRefused):  # inside the month mailed
            balances.enter_balance(found, owner, "BTC", Decimal(2), last_moment)
        next_month = datetime(2026, 11, 1, tzinfo=UTC)  # November's first moment: not October's
        balances.enter_balance(found, owner, "BTC", Decimal(2), next_month)
        db.session.commit()

    october, november = figures(merchant, OCTOBER), figures(merchant, NOVEMBER)

    assert october == mailed
    assert october["statement"] == october["export"] == (0, Decimal("0.495"))
    assert [net for _type, net, _after in october["export rows"]] == [
        Decimal("0.5"),
        Decimal("-0.005"),
    ]
    assert november["statement"] == november["export"] == (Decimal("0.495"), Decimal("2.1"))
    assert november["adjustments"] == Decimal("1.505"), "2 less the 0.495 derived until then"
    assert november["export rows"] == [
        ("Opening balance", Decimal("1.505"), 2),
        ("Payment", Decimal("0.1"), Decimal("2.1")),
    ]
    assert november["statement adds up"]


def test_the_export_gives_no_value_in_a_currency_its_header_does_not_name(merchant):
    """A movement valued in another currency (before `ledger.revalue` reached it) has no value
    under the header `value_usd`, as the statement and the dashboard count it without one."""
    import sqlalchemy as sa

    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.models import LedgerEntry
    from portal.periods import Period as Days
    from portal.reports.rules import ledger_rows

    moment = datetime(2026, 10, 10, tzinfo=UTC)
    book(merchant, [("payment", "BTC", Decimal("0.5"), moment)])
    with merchant.app_context():
        db.session.execute(
            sa.update(LedgerEntry).values(value=Decimal(10), value_currency="ETH", rate=20)
        )
        db.session.commit()

    with merchant.app_context():
        found = accounts.merchant_named(MERCHANT)
        [row] = ledger_rows.ledger_rows(found, *Days(*OCTOBER, UTC).instants)
    assert (row.value, row.rate, row.rate_at) == (None, None, None)

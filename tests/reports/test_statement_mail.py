"""The statement by mail, through a real local SMTP server, with the clock frozen: each period's
mail arrives once, however often the worker's mail task runs (each run in an application
context of its own, as after a restart), in the recipient's own zone, with a link to sign in
and a link that stops the next one; a user demoted before the send gets nothing."""

from __future__ import annotations

import io
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import openpyxl
import pytest
import sqlalchemy as sa

from tests.support import factories
from tests.support.forms import csrf_token, signed_in
from tests.support.smtp import text_of
from tests.support.worker import running_worker

PUBLIC_URL = "http://portal.example.com"
BERLIN = ZoneInfo("Europe/Berlin")
CHOSEN = datetime(2026, 11, 15, 12, 0, tzinfo=UTC)
# Five past midnight on the first of December in Berlin.
DECEMBER_FIRST = datetime(2026, 12, 1, 0, 5, tzinfo=BERLIN).astimezone(UTC)


@pytest.fixture
def portal_config(portal_config, mail_server):
    return {**portal_config, "SMTP_URL": mail_server.url, "PUBLIC_URL": PUBLIC_URL}


@pytest.fixture
def clock(monkeypatch):
    """The statement rule's clock, at `CHOSEN` until the test moves it."""
    from portal.reports.rules import statement_mail

    now = [CHOSEN]
    monkeypatch.setattr(statement_mail, "utcnow", lambda: now[0])
    return now


def accountant_choosing(app, email: str, frequency: str, zone: str = "Europe/Berlin") -> int:
    """An accountant of Acme in `zone` who chose the statement `frequency` (at `CHOSEN`)."""
    from portal.extensions import db
    from portal.identity.models import User
    from portal.live.models import StatementFrequency
    from portal.reports.rules import statement_mail

    made = factories.user(app, email, "accountant")
    with app.app_context():
        user = db.session.get(User, made.id)
        user.time_zone = zone
        db.session.commit()
        statement_mail.choose(user, StatementFrequency(frequency))
    return made.id


def book(app, kind: str, amount: str, at: datetime) -> None:
    """A movement of Acme's BTC wallet in the ledger, as the mirror books it: with its month."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.models import LedgerEntry
    from portal.money.rules import ledger_totals

    with app.app_context():
        merchant = accounts.merchant_named("Acme")
        generation = merchant.api_connection.generation
        entry = LedgerEntry(
            merchant_id=merchant.id,
            connection_generation=generation,
            key=f"{kind}:{at.isoformat()}",
            kind=kind,
            currency="BTC",
            amount=Decimal(amount),
            occurred_at=at,
        )
        db.session.add(entry)
        ledger_totals.add(merchant.id, generation, [entry])
        db.session.commit()


def run_worker_mail_task() -> None:
    """The worker's mail stage, as a tick runs it: in an application context of its own."""
    from portal.live.worker import tasks

    tasks.send_mail.call_local()


@pytest.fixture
def november(app, clock, worker_of_this_portal):
    """Acme's November: an opening of 1 BTC in October, then 0.5 BTC received less a fee."""
    factories.api_connection(app)
    book(app, "opening", "1", datetime(2026, 10, 20, tzinfo=UTC))
    book(app, "payment", "0.5", datetime(2026, 11, 10, tzinfo=UTC))
    book(app, "fee", "-0.0025", datetime(2026, 11, 10, tzinfo=UTC))


def test_a_monthly_statement_arrives_once_across_restarts(app, november, clock, mail_server):
    accountant_choosing(app, "books@acme.test", "monthly")
    clock[0] = DECEMBER_FIRST
    for _ in range(3):
        run_worker_mail_task()

    [mail] = mail_server.wait_for(1)
    assert len(mail_server.messages) == 1
    assert mail["To"] == "books@acme.test"
    assert "2026-11-01 to 2026-11-30" in mail["Subject"]
    text = text_of(mail)
    assert "Opening:      1 BTC" in text
    assert "Net received: 0.4975 BTC" in text
    assert "Closing:      1.4975 BTC" in text
    assert f"{PUBLIC_URL}/reports?from=2026-11-01&to=2026-11-30" in text
    stop = mail["List-Unsubscribe"].strip("<>")
    assert stop in text and stop.startswith(f"{PUBLIC_URL}/statement-mail/stop/")
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"

    # The period's ledger rides along as a workbook whose numbers add up to the statement.
    assert "attached as a workbook (.xlsx)" in text
    [attached] = list(mail.iter_attachments())
    assert attached.get_filename() == "ledger_2026-11-01_2026-11-30.xlsx"
    assert attached.get_content_type() == (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    )
    book_ = openpyxl.load_workbook(io.BytesIO(attached.get_content()))
    header, *rows = book_["BTC"].iter_rows(values_only=True)
    net = [row[header.index("net")] for row in rows]
    assert all(isinstance(cell, float | int) for cell in net)
    assert Decimal(str(round(sum(net), 8))) == Decimal("0.4975")


def test_the_stop_link_stops_the_next_statement(app, november, clock, mail_server):
    accountant_choosing(app, "books@acme.test", "monthly")
    clock[0] = DECEMBER_FIRST
    run_worker_mail_task()
    [mail] = mail_server.wait_for(1)
    path = urlsplit(mail["List-Unsubscribe"].strip("<>")).path

    visitor = app.test_client()
    shown = visitor.get(path)
    assert shown.status_code == 200 and "Stop statement e-mails" in shown.text
    # A mail program's one-click unsubscribe: a POST with no page and no session.
    stopped = visitor.post(path, data={"List-Unsubscribe": "One-Click"})
    assert stopped.status_code == 200
    assert "Statement e-mails to books@acme.test are stopped" in stopped.text

    clock[0] = datetime(2027, 1, 1, 0, 5, tzinfo=BERLIN).astimezone(UTC)
    run_worker_mail_task()
    assert len(mail_server.messages) == 1
    assert app.test_client().get(path[:-3] + "xyz").status_code == 404


def test_a_removed_users_stop_link_names_nobody_who_gets_their_id_next(app):
    """SQLite gives a removed row's id again: a stop link naming the id alone would show the
    next user's address to the removed one, and stop their statements."""
    import sqlalchemy as sa

    from portal.extensions import db
    from portal.identity.models import User
    from portal.live.models import StatementChoice, StatementFrequency
    from portal.reports.rules import statement_mail

    leaver = accountant_choosing(app, "leaver@acme.test", "monthly")
    with app.test_request_context():
        path = urlsplit(statement_mail.stop_link(db.session.get(User, leaver))).path
        db.session.delete(db.session.get(User, leaver))
        db.session.commit()
    newcomer = factories.user(app, "newcomer@acme.test", "accountant").id
    with app.app_context():  # the newcomer takes the removed user's id, as SQLite may give it
        db.session.execute(sa.update(User).where(User.id == newcomer).values(id=leaver))
        statement_mail.choose(db.session.get(User, leaver), StatementFrequency.MONTHLY)

    shown = app.test_client().get(path)
    posted = app.test_client().post(path, data={"List-Unsubscribe": "One-Click"})

    assert (shown.status_code, posted.status_code) == (404, 404)
    assert "newcomer@acme.test" not in shown.text + posted.text
    assert shown.headers["Cache-Control"] == "no-store"
    with app.app_context():
        assert db.session.get(User, leaver).email == "newcomer@acme.test"
        assert db.session.get(StatementChoice, leaver).frequency.value == "monthly"


def test_a_user_demoted_before_the_send_gets_nothing(app, november, clock, mail_server):
    from portal.extensions import db
    from portal.identity.models import Role, User

    demoted = accountant_choosing(app, "former@acme.test", "monthly")
    accountant_choosing(app, "books@acme.test", "monthly")
    with app.app_context():
        db.session.get(User, demoted).role = Role.OPERATOR
        db.session.commit()
    clock[0] = DECEMBER_FIRST
    run_worker_mail_task()

    [mail] = mail_server.wait_for(1)
    run_worker_mail_task()
    assert mail["To"] == "books@acme.test"
    assert [m["To"] for m in mail_server.messages] == ["books@acme.test"]


def test_each_recipient_gets_the_period_of_their_own_zone(app, november, clock, mail_server):
    accountant_choosing(app, "kiritimati@acme.test", "monthly", zone="Pacific/Kiritimati")
    accountant_choosing(app, "utc@acme.test", "monthly", zone="UTC")
    # Midnight and five minutes in Kiritimati (UTC+14): still 30 November in UTC.
    clock[0] = datetime(2026, 12, 1, 0, 5, tzinfo=ZoneInfo("Pacific/Kiritimati")).astimezone(UTC)
    run_worker_mail_task()

    [mail] = mail_server.wait_for(1)
    run_worker_mail_task()
    assert [m["To"] for m in mail_server.messages] == ["kiritimati@acme.test"]
    assert "/reports?from=2026-11-01&to=2026-11-30" in text_of(mail)


def test_owners_and_accountants_choose_on_the_account_page(app, accounts, clock):
    from portal.identity.rules import accounts as service
    from portal.reports.rules import statement_mail

    accountant = signed_in(app, accounts.accountant)
    assert "E-mail me the statement" in accountant.get("/account").text
    saved = accountant.post(
        "/account/statement-mail",
        data={"statement-frequency": "weekly", "csrf_token": csrf_token(accountant, "/account")},
    )
    assert saved.status_code == 302
    with app.app_context():
        user = service.find_user(accounts.accountant)
        assert statement_mail.choice_of(user).value == "weekly"

    operator = signed_in(app, accounts.operator)
    assert "E-mail me the statement" not in operator.get("/account").text


def test_a_period_already_mailed_never_changes(app, accounts, november, clock, mail_server):
    """A balance entered as of a moment inside a mailed period is refused and books nothing:
    a correction seen later is booked when it is seen, after the period."""
    from tests.support.money import post, text

    accountant_choosing(app, "books@acme.test", "monthly")
    owner = signed_in(app, accounts.owner)
    inside = {"amount": "1.6", "as_of": "2026-11-20 12:00"}
    assert post(owner, "/balances/BTC/opening", inside).status_code == 302, "not mailed yet"
    clock[0] = DECEMBER_FIRST
    run_worker_mail_task()
    mail_server.wait_for(1)

    later = {"amount": "1.7", "as_of": "2026-11-25 12:00"}
    refused = post(owner, "/balances/BTC/opening", later)
    assert refused.status_code == 422
    assert "A statement up to 2026-11-30 23:00:00 UTC was already sent by e-mail" in text(refused)
    assert [kind for kind, _ in ledger(app)] == ["opening", "payment", "fee", "adjustment"]


@pytest.mark.slow  # worker processes
def test_a_worker_process_restarted_sends_no_second_statement(
    app, tmp_path, mail_server, monkeypatch
):
    """Two real worker processes one after the other, on the real clock: last week's
    statement of a user who chose it two weeks ago arrives once."""
    from portal.extensions import db
    from portal.live.models import StatementChoice

    factories.api_connection(app)
    accountant_choosing(app, "books@acme.test", "weekly")
    with app.app_context():  # chosen before last week began
        db.session.execute(
            sa.update(StatementChoice).values(chosen_at=datetime.now(UTC) - timedelta(days=15))
        )
        db.session.commit()
    monkeypatch.setenv("PORTAL_SMTP_URL", mail_server.url)
    monkeypatch.setenv("PORTAL_PUBLIC_URL", PUBLIC_URL)
    with running_worker(app, tmp_path / "first"):
        [mail] = mail_server.wait_for(1, timeout=30)
    with running_worker(app, tmp_path / "again"):
        time.sleep(3)  # three ticks of a second: time enough to send a second, were it to
    assert len(mail_server.messages) == 1
    assert "weekly statement" in mail["Subject"]


def ledger(app) -> list[tuple[str, Decimal]]:
    import sqlalchemy as sa

    from portal.extensions import db
    from portal.money.models import LedgerEntry

    with app.app_context():
        query = sa.select(LedgerEntry.kind, LedgerEntry.amount).order_by(LedgerEntry.id)
        return [tuple(row) for row in db.session.execute(query)]

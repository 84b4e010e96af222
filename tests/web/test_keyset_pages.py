"""The portal's own lists page by key: Next and Previous walk every row once, in order; rows
written between two requests do not shift a page; a deep page reads no OFFSET; a cursor the
portal did not write shows the first page, never an error."""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Callable, Iterator

import pytest
import sqlalchemy as sa

from tests.support import factories
from tests.support.forms import signed_in

AUDIT = "/audit?action=user.change"
ROW = re.compile(r"row(\d{3})@acme\.test")
LINK = 'rel="{}" href="([^"]+)"'


def _events(app, accounts, numbers: range) -> None:
    """One audit event per number, the number in its parameters, in the order of `numbers`."""
    rows = [{"email": f"row{number:03d}@acme.test"} for number in numbers]
    factories.audit_events(app, "user.change", rows, email=accounts.owner)


def _links(body: str) -> dict[str, str]:
    """A page's Previous and Next links, by their `rel`."""
    found = {rel: re.search(LINK.format(rel), body) for rel in ("prev", "next")}
    return {rel: html.unescape(link[1]) for rel, link in found.items() if link}


def _page(client, url: str, rows: re.Pattern = ROW) -> tuple[list[int], dict[str, str]]:
    """The numbers of the rows a page shows, and its Previous and Next links."""
    response = client.get(url)
    assert response.status_code == 200
    body = response.get_data(as_text=True)
    return [int(number) for number in rows.findall(body)], _links(body)


def _walk(client, url: str, rel: str, rows: re.Pattern = ROW) -> Iterator[tuple[str, list[int]]]:
    """Each page from `url` on, following the link `rel` until there is none."""
    while True:
        numbers, links = _page(client, url, rows)
        yield url, numbers
        if rel not in links:
            return
        url = links[rel]


def test_next_then_previous_show_every_row_once_in_order(each_database, app, accounts):
    _events(app, accounts, range(120))
    owner = signed_in(app, accounts.owner)
    forward = list(_walk(owner, AUDIT, "next"))
    assert [len(rows) for _, rows in forward] == [50, 50, 20]
    assert [row for _, rows in forward for row in rows] == list(range(119, -1, -1))
    backward = list(_walk(owner, forward[-1][0], "prev"))
    assert [rows for _, rows in backward] == [rows for _, rows in reversed(forward)]
    assert "after=" in forward[1][0] and "before=" in backward[1][0]


def test_rows_written_between_requests_do_not_shift_a_page(each_database, app, accounts):
    _events(app, accounts, range(120))
    owner = signed_in(app, accounts.owner)
    _, links = _page(owner, AUDIT)
    second, second_links = _page(owner, links["next"])
    _events(app, accounts, range(200, 210))  # newer than every row: the first page gets them
    assert _page(owner, links["next"])[0] == second == list(range(69, 19, -1))
    back, back_links = _page(owner, second_links["prev"])
    assert back == list(range(119, 69, -1))
    assert _page(owner, back_links["prev"])[0] == [*range(209, 199, -1), *range(119, 79, -1)]


def test_previous_to_less_than_a_page_shows_the_first_page(app, accounts):
    from portal.extensions import db
    from portal.identity.models import AuditEvent

    _events(app, accounts, range(60))
    owner = signed_in(app, accounts.owner)
    _, links = _page(owner, AUDIT)
    second, links = _page(owner, links["next"])
    assert second == list(range(9, -1, -1))
    with app.app_context():  # the 20 newest go: 30 rows are left before the second page
        changes = sa.select(AuditEvent.id).where(AuditEvent.action == "user.change")
        newest = changes.order_by(AuditEvent.id.desc()).limit(20).subquery()
        db.session.execute(sa.delete(AuditEvent).where(AuditEvent.id.in_(sa.select(newest))))
        db.session.commit()
    back, links = _page(owner, links["prev"])
    assert back == list(range(39, -1, -1))
    assert "prev" not in links


def test_a_long_list_is_counted_up_to_a_thousand(app, accounts):
    from portal.extensions import db
    from portal.identity.models import AuditEvent
    from portal.identity.rules.accounts import merchant_named

    _events(app, accounts, range(3))
    with app.app_context():
        row = {"merchant_id": merchant_named("Acme").id, "action": "user.change", "outcome": "ok"}
        db.session.execute(sa.insert(AuditEvent), [{**row, "parameters": {}}] * 997)
        db.session.commit()
    owner = signed_in(app, accounts.owner)
    assert ">1,000 events<" in owner.get(AUDIT).get_data(as_text=True)
    _events(app, accounts, range(1))
    assert ">More than 1,000 events<" in owner.get(AUDIT).get_data(as_text=True)


def _cursor(*values: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "garbage",
        "%%%",
        "=" * 8,
        "A" * 5000,
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        _cursor(),
        _cursor("2026-01-01T00:00:00+00:00"),
        _cursor("2026-01-01T00:00:00+00:00", 1, 2),
        _cursor("2026-01-01T00:00:00", 1),  # no zone
        _cursor("0001-01-01T00:00:00+05:00", 1),  # before the first moment there is, in UTC
        _cursor("2026-13-01T00:00:00+00:00", 1),
        _cursor("2026-01-01T00:00:00+00:00", 2**63),
        _cursor("2026-01-01T00:00:00+00:00", True),
        _cursor("2026-01-01T00:00:00+00:00", 1.5),
        _cursor("2026-01-01T00:00:00+00:00", "1"),
        _cursor(1, "2026-01-01T00:00:00+00:00"),
        _cursor({"a": 1}, None),
        base64.urlsafe_b64encode(b'{"created_at": 1}').decode(),
    ],
)
@pytest.mark.parametrize("direction", ["after", "before"])
def test_a_cursor_the_portal_did_not_write_shows_the_first_page(app, accounts, cursor, direction):
    _events(app, accounts, range(60))
    owner = signed_in(app, accounts.owner)
    rows, links = _page(owner, f"{AUDIT}&{direction}={cursor}")
    assert rows == list(range(59, 9, -1))
    assert "prev" not in links and "next" in links


def test_a_cursor_past_either_end_shows_an_empty_page_that_leads_back(each_database, app, accounts):
    _events(app, accounts, range(60))
    owner = signed_in(app, accounts.owner)
    rows, links = _page(owner, f"{AUDIT}&after={_cursor('2000-01-01T00:00:00+00:00', 1)}")
    assert rows == [] and "next" not in links
    assert _page(owner, links["prev"])[0] == list(range(49, -1, -1))[-50:]
    rows, links = _page(owner, f"{AUDIT}&after={_cursor('9999-12-31T23:59:59+00:00', 1)}")
    assert rows == list(range(59, 9, -1)) and "next" in links


def _statements(app) -> Callable[[], list[tuple[str, object]]]:
    """The SQL statements run from now on, with their parameters, as a function that lists them."""
    from portal.extensions import db

    seen: list[tuple[str, object]] = []
    with app.app_context():
        engine = db.engine
    sa.event.listen(engine, "before_cursor_execute", lambda *args: seen.append(args[2:4]))
    return lambda: list(seen)


def test_a_deep_page_reads_by_key_not_by_offset(app, accounts):
    _events(app, accounts, range(120))
    owner = signed_in(app, accounts.owner)
    pages = list(_walk(owner, AUDIT, "next"))
    statements = _statements(app)
    _page(owner, pages[-1][0])
    listed = [(sql, args) for sql, args in statements() if "LIMIT" in sql and "audit_events" in sql]
    assert listed, statements()
    for sql, args in listed:  # SQLite's dialect writes OFFSET 0 after every LIMIT
        offsets = [list(args)[sql[: at.start()].count("?")] for at in re.finditer("OFFSET", sql)]
        assert set(offsets) <= {0}, sql
    key = re.compile(r"\(audit_events\.created_at, audit_events\.id\) <")
    assert any(key.search(sql) for sql, _ in listed)


def test_the_delivery_log_pages_by_key(each_database, app, accounts):
    """The delivery log: another list, sorted by its id alone, through a join."""
    from portal.database import utcnow
    from portal.extensions import db
    from portal.live.models import Event, WebhookAttempt, WebhookDelivery, WebhookEndpoint

    endpoint_id = factories.webhook_endpoint(app, "https://shop.example/hooks")
    with app.app_context():
        merchant_id = db.session.get_one(WebhookEndpoint, endpoint_id).merchant_id
        for number in range(60):
            event = Event(
                public_id=f"evt_{number:03d}",
                merchant_id=merchant_id,
                type="operation.confirmed",
                dedup_key=f"key-{number}",
                data={},
                occurred_at=utcnow(),
            )
            delivery = WebhookDelivery(endpoint_id=endpoint_id, event=event)
            db.session.add(WebhookAttempt(delivery=delivery, duration_ms=number))
        db.session.commit()
    owner = signed_in(app, accounts.owner)
    url, rows = f"/settings/notifications?endpoint_id={endpoint_id}", re.compile(r"evt_(\d{3})<")
    forward = list(_walk(owner, url, "next", rows))
    assert [number for _, numbers in forward for number in numbers] == list(range(59, -1, -1))
    backward = list(_walk(owner, forward[-1][0], "prev", rows))
    assert [numbers for _, numbers in backward] == [numbers for _, numbers in reversed(forward)]

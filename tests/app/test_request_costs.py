"""What every signed-in page costs before its own work: the shared path is kept short."""

from __future__ import annotations

from tests.support.forms import sign_in
from tests.support.mirror_rows import mirror, operation_record, transaction_record
from tests.support.statements import statements_of


def test_a_signed_in_page_reads_the_database_once(app, client, accounts):
    """The session, its user, the merchant, its API connection and its mirror's state (when it
    last synced, and the menu's count of what needs attention) come in one query."""
    sign_in(client, accounts.owner)
    client.get("/")  # the first page after signing in asks, once, for a time zone (a write)
    statements = statements_of(app, client, "/settings/api")
    assert len(statements) == 1, statements
    assert "mirror_states" in statements[0]


def test_the_menus_count_of_what_needs_attention_adds_no_query(app, client, accounts):
    """The menu shows how many items need attention on every page: the count comes with the
    session's one query, right after a sync as much as before the mirror has any item."""
    sign_in(client, accounts.owner)
    client.get("/")
    without_count = statements_of(app, client, "/settings/api")
    mirror(app, operation_record(status="failed"))
    mirror(app, operation_record(transactions=[transaction_record(status="undefined")]))
    with_count = statements_of(app, client, "/settings/api")  # the first page after the sync
    assert len(with_count) == len(without_count) == 1, with_count
    menu = client.get("/settings/api").get_data(as_text=True).split("</nav>")[0]
    assert 'Needs attention <span class="badge status-new">2</span>' in menu


def test_a_signed_in_healthz_reads_the_session_as_every_signed_in_request(app, client, accounts):
    """bench/page_cost.py takes a signed-in /healthz as the no-op every page costs at least: it
    loads the session with its user (one query) and answers as to a signed-in user."""
    sign_in(client, accounts.owner)
    statements = statements_of(app, client, "/healthz")
    assert len(statements) == 1 and "user_sessions" in statements[0], statements
    assert client.get("/healthz").headers["Cache-Control"] == "no-store"


def test_a_static_file_reads_no_database(app, client, accounts):
    """A signed-in browser's stylesheet does not look the session up."""
    sign_in(client, accounts.owner)
    assert statements_of(app, client, "/static/portal.css") == []


def test_the_session_cookie_is_set_at_sign_in_only(client, accounts):
    """The server ends sessions itself, so pages do not re-sign and re-send the cookie."""
    signed_in = sign_in(client, accounts.owner)
    assert "portal_session=" in signed_in.headers.get("Set-Cookie", "")
    client.get("/settings/api")  # shows the sign-in's message and makes the form's CSRF token
    page = client.get("/settings/api")
    assert page.status_code == 200
    assert "Set-Cookie" not in page.headers

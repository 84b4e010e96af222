"""The audit log: sign-ins, settings and users recorded with secrets masked; /audit filters,
exports CSV that no spreadsheet runs as formulas, and offers no way to change the log."""

from __future__ import annotations

import csv
import io
import re
from datetime import date, timedelta

from tests.support import factories
from tests.support.forms import sign_in, signed_in
from tests.support.money import post, text


def test_sign_ins_settings_and_users_are_recorded(app, accounts, sandbox):
    client = app.test_client()
    assert sign_in(client, accounts.owner, "a wrong password").status_code == 401
    assert sign_in(client, "nobody@acme.test", "a wrong password").status_code == 401
    owner = signed_in(app, accounts.owner)
    response = post(
        owner,
        "/settings/api",
        {"base_url": sandbox.base_url, "environment": "sandbox", "token": sandbox.token},
    )
    assert response.status_code == 302
    assert post(owner, "/settings/api", {"base_url": sandbox.base_url, "environment": "sandbox",
                                         "token": "not-the-token"}).status_code == 422  # fmt: skip
    added = post(
        owner,
        "/settings/users",
        {"email": "new@acme.test", "role": "operator", "password": "a long password 1"},
    )
    assert added.status_code == 302
    post(owner, "/logout")

    page = text(signed_in(app, accounts.owner).get("/audit"))
    assert "Sign-in" in page and "The email or password is incorrect." in page
    assert "API settings changed" in page and f"token: ••••{sandbox.token[-4:]}" in page
    assert "rejected the application token" in page
    assert "User added" in page and "new@acme.test" in page
    assert "Sign-out" in page
    assert sandbox.token not in page and "a long password 1" not in page
    assert "nobody@acme.test" not in page, "a stranger's attempt belongs to no merchant"


def test_filter_export_and_no_edit_route(app, accounts):
    owner = signed_in(app, accounts.owner)
    signed_in(app, accounts.operator)
    today = date.today().isoformat()

    only_operator = text(owner.get(f"/audit?user={accounts.operator}&action=sign_in"))
    assert "1 event" in only_operator and accounts.operator in only_operator
    tomorrow = (date.today() + timedelta(days=2)).isoformat()
    assert "0 events" in text(owner.get(f"/audit?date_from={tomorrow}"))
    bad = owner.get("/audit?date_from=2024-05-02&date_to=2024-05-01")
    assert bad.status_code == 422 and "on or after the first day" in text(bad)

    export = owner.get(f"/audit/export.csv?action=sign_in&date_from={today}&date_to={today}")
    assert export.mimetype == "text/csv"
    rows = list(csv.reader(io.StringIO(export.get_data(as_text=True))))
    assert rows[0][:3] == ["Time (UTC)", "User", "Action"]
    assert {row[1] for row in rows[1:]} == {accounts.owner, accounts.operator}
    assert export.get_data(as_text=True).endswith("\r\n")

    assert owner.post("/audit").status_code == 405
    assert owner.delete("/audit").status_code == 405
    assert signed_in(app, accounts.operator).get("/audit").status_code == 403


def test_csv_cells_never_run_as_formulas():
    from portal.identity.pages.audit_log.queries import safe_cell

    for dangerous in ("=1+1", "+1+1", "-1-1", "@SUM(A1)", "\tx", "\rx", "\nx"):
        assert safe_cell(dangerous) == "'" + dangerous
    assert safe_cell("plain, text") == "plain, text" and safe_cell(None) == ""


def test_secrets_are_masked_and_actions_checked(app):
    import pytest

    from portal.identity.rules import audit

    assert audit.masked({"code": "ABCD-EFGH", "password": "x", "token": "t" * 20}) == {
        "code": "••••",
        "password": "••••",
        "token": "••••tttt",
    }
    with app.test_request_context(), pytest.raises(ValueError, match="unknown audit action"):
        audit.record("voucher.created")


def test_pages_of_the_log_keep_the_filters(app, accounts):
    for _ in range(55):
        factories.audit_event(
            app, "user.change", email=accounts.owner, parameters={"email": "x@acme.test"}
        )
    owner = signed_in(app, accounts.owner)
    first = owner.get("/audit?action=user.change").get_data(as_text=True)
    assert 'rel="prev"' not in first
    after = re.search(r'rel="next" href="/audit\?action=user.change&amp;after=([\w-]+)"', first)
    assert after, "Next keeps the filter"
    second = owner.get(f"/audit?action=user.change&after={after[1]}").get_data(as_text=True)
    assert re.search(r'rel="prev" href="/audit\?action=user.change&amp;before=[\w-]+"', second)
    assert 'rel="next"' not in second

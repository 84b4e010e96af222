"""A hostile or broken API cannot exhaust or break the portal: an amount such as
`1E+999999999` is a finite Decimal that would be written out as a billion digits, a NUL byte
cannot be stored; the portal refuses them as malformed answers (502) instead of using them.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support.fake_api import Answer, FakeApi, operation_json, page_json, voucher_json
from tests.support.forms import signed_in
from tests.support.money import intent_key, post
from tests.support.portal_app import connected_portal, email

PING = Answer(200, {"data": {"status": "ok"}})


def test_a_page_never_writes_out_a_huge_amount(tmp_path):
    """The amount is refused as unusable: the list reads the portal's copy (read-only), the
    record says the copy has none, the export fails; none writes the amount out."""
    huge = operation_json(amount="1E+5000000", amount_paid="1E+5000000")
    with FakeApi() as fake:
        fake.answer("GET", "/sandbox/v1/ping", PING)
        fake.answer("GET", "/sandbox/v1/operations/42", Answer(200, {"data": huge}))
        fake.answer(
            "GET",
            "/sandbox/v1/operations",
            Answer(200, page_json([huge], page=1, per_page=50, total=1)),
        )
        upstream = SimpleNamespace(base_url=fake.base_url, token="hostile-api-token")
        with connected_portal(tmp_path, upstream) as app:
            owner = signed_in(app, email("owner"))
            for path, status in (
                ("/operations", 200),
                ("/operations/42", 404),
                ("/operations/export.csv", 502),
            ):
                response = owner.get(path)
                assert response.status_code == status, path
                assert len(response.data) < 50_000, path
                assert "payment service" in response.get_data(as_text=True), path


NUL_ID = Answer(201, {"data": voucher_json(id="v1\u0000")})
LONG_ID = Answer(201, {"data": voucher_json(id="v" * 100)})


# A NUL in a record, or an id longer than the portal's column (PostgreSQL refused to store it;
# SQLite does not check lengths): a malformed answer (502).
@pytest.mark.parametrize(
    ("database", "answer", "status"),
    [("sqlite", NUL_ID, 502), ("postgresql", NUL_ID, 502), ("postgresql", LONG_ID, 502)],
    ids=["nul-sqlite", "nul-postgresql", "long-id-postgresql"],
)
def test_an_answer_the_portal_cannot_keep_leaves_the_voucher_unknown_not_sending(
    request, tmp_path, database, answer, status
):
    """The voucher may exist upstream: the form is never sent again, and says so."""
    config = {}
    if database == "postgresql":
        config["DATABASE_URL"] = request.getfixturevalue("postgres_url")
    with FakeApi() as fake:
        fake.answer("GET", "/sandbox/v1/ping", PING)
        fake.answer("POST", "/sandbox/v1/vouchers", answer)
        # The form offers the currencies the exchange rates name.
        rates = Answer(200, {"data": {"BTC:USD": "65000"}})
        fake.answer("GET", "/sandbox/v1/exchange/rates", rates)
        upstream = SimpleNamespace(base_url=fake.base_url, token="hostile-api-token")
        with connected_portal(tmp_path, upstream, **config) as app:
            app.config["PROPAGATE_EXCEPTIONS"] = False
            owner = signed_in(app, email("owner"))
            form = {"amount": "1", "currency": "BTC", "intent": intent_key(owner, "/vouchers/new")}
            assert post(owner, "/vouchers/new", form).status_code == status
            again = post(owner, "/vouchers/new", form)
        assert again.status_code == 409
        assert "Outcome unknown" in again.get_data(as_text=True)
        assert fake.count("POST", "/sandbox/v1/vouchers") == 1

"""A hostile or broken API cannot exhaust the portal: an amount such as `1E+999999999` is a
finite Decimal that would be written out as a billion digits; the portal refuses it as a
malformed answer (502) instead of rendering it.
"""

from __future__ import annotations

from types import SimpleNamespace

from tests.support.money import signed_in
from tests.support.portal_app import connected_portal, email
from tests.unit.test_api_support import Answer, FakeApi, operation_json, page_json

PING = Answer(200, {"data": {"status": "ok"}})


def test_a_page_answers_502_instead_of_writing_out_a_huge_amount(tmp_path):
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
            for path in ("/operations", "/operations/42", "/operations/export.csv"):
                response = owner.get(path)
                assert response.status_code == 502, path
                assert len(response.data) < 50_000, path
                assert "The payment service" in response.get_data(as_text=True), path

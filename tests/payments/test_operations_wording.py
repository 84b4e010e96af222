"""The operations list speaks the words of its own filter: a withdrawal's operation is a
"Withdrawal" in the category filter and in the column, never the API's `transfer`."""

from __future__ import annotations

import pytest

from tests.support.forms import signed_in
from tests.support.money import connect, post, review_withdrawal


@pytest.fixture
def owner(app, accounts, module_sandbox):
    connect(app, module_sandbox)
    return signed_in(app, accounts.owner)


def test_category_filter_and_column_say_the_same(owner) -> None:
    _address, review = review_withdrawal(owner, "0.001")
    assert post(owner, review + "/confirm").status_code == 302
    page = owner.get("/operations?category=transfer")
    body = page.get_data(as_text=True)
    assert '<option selected value="transfer">Withdrawal</option>' in body or (
        '<option value="transfer" selected>Withdrawal</option>' in body
    )
    assert '<td data-label="Category">Withdrawal</td>' in body and ">transfer</td>" not in body
    assert "Order number (exact match)" in body and ">Per page</label>" in body

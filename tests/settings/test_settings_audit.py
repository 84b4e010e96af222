"""Every change under /settings is in the audit log, refused ones with their reasons; `/settings`
itself opens the first settings page."""

from __future__ import annotations

import csv
import io

import pytest

from tests.support.forms import signed_in
from tests.support.money import post


@pytest.fixture
def owner(app, accounts):
    return signed_in(app, accounts.owner)


def audited(owner, action: str) -> list[dict[str, str]]:
    """The audit log's rows of `action`, newest first, as the owner exports them."""
    export = owner.get(f"/audit/export.csv?action={action}")
    assert export.status_code == 200
    return list(csv.DictReader(io.StringIO(export.get_data(as_text=True))))


def test_a_change_of_the_shop_link_or_support_address_is_audited(owner):
    form = {"shop_url": "https://shop.example.com/back", "support_email": "help@shop.example"}
    assert post(owner, "/settings/checkout", form).status_code == 302
    [saved] = audited(owner, "checkout_settings.change")
    assert saved["Outcome"] == "Success"
    assert "https://shop.example.com/back" in saved["Parameters"]
    assert "help@shop.example" in saved["Parameters"]

    refused = post(owner, "/settings/checkout", {"shop_url": "javascript:alert(1)"})
    assert refused.status_code == 422
    newest = audited(owner, "checkout_settings.change")[0]
    assert newest["Outcome"] == "Refused" and newest["Error message"]


def test_a_refused_payment_tolerance_is_audited(owner):
    form = {"payment_tolerance_percent": "99"}
    assert post(owner, "/settings/checkout/tolerance", form).status_code == 422
    [refused] = audited(owner, "payment_tolerance.change")
    assert refused["Outcome"] == "Refused" and "99" in refused["Parameters"]


def test_settings_opens_the_first_settings_page_for_owners_only(app, owner, accounts):
    answer = owner.get("/settings")
    assert answer.status_code == 302
    assert answer.headers["Location"].endswith("/settings/api")
    assert signed_in(app, accounts.operator).get("/settings").status_code == 403

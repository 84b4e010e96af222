"""What a person needs to see before and after moving money, against the sandbox:
the withdrawal's wallets, network fee and refusal figures, vouchers found by a code however it is
typed and named in plain words, and the withdrawals list for accountants."""

from __future__ import annotations

import re

import pytest
import requests

from tests.support.forms import signed_in
from tests.support.money import connect, post, review_withdrawal, submit, text


@pytest.fixture
def owner(app, accounts, sandbox):
    connect(app, sandbox)
    return signed_in(app, accounts.owner)


# --- Withdrawals: wallets, fee, refusals ----------------------------------------------------


def test_usd_is_not_offered_as_a_withdrawal_wallet_and_is_refused_if_posted(owner, sandbox):
    form = owner.get("/withdrawals/new").get_data(as_text=True)
    wallet = re.search(r'<select[^>]*name="wallet".*?</select>', form, re.S).group(0)
    assert re.findall(r'<option value="(\w+)"', wallet) == ["BTC", "ETH", "USDT"]

    posted = post(
        owner, "/withdrawals/new", {"amount": "1", "wallet": "USD", "address": "somewhere-else"}
    )
    assert posted.status_code == 422
    assert "A withdrawal goes to a blockchain address, so it cannot leave the USD wallet" in (
        text(posted)
    )


def test_the_review_says_what_arrives_and_when_the_fee_is_known(owner, sandbox):
    _address, review = review_withdrawal(owner, "0.5")
    page = text(owner.get(review))
    assert "Arrives at the address 0.5 ETH" in page
    assert "Network fee Not known yet: the payment service reports it only once" in page
    assert "Leaves your wallet 0.5 ETH plus the network fee" in page

    assert post(owner, review + "/confirm").status_code == 302
    sent = text(owner.get(review))
    # The sandbox's network fee for ETH to an outside address is 0.001 ETH (docs/sandbox.md).
    assert "Network fee 0.001 ETH" in sent
    assert "Left your wallet 0.501 ETH, of which 0.5 ETH arrives at the address" in sent
    row = re.search(r"<tr>\s*<td>.*?</tr>", owner.get("/withdrawals").get_data(as_text=True), re.S)
    assert "0.001 ETH" in row.group(0), "the list shows the fee too"


def test_a_refusal_over_the_limit_shows_the_figures_the_portal_knows(owner, sandbox):
    _address, first = review_withdrawal(owner, "150")
    assert post(owner, first + "/confirm").status_code == 302  # 150 of the day's 200 ETH
    _address, second = review_withdrawal(owner, "60")
    refused = post(owner, second + "/confirm")
    assert refused.status_code == 422
    page = text(refused)
    assert "today's withdrawal limit would be exceeded" in page
    assert "Amount asked 60 ETH, plus the network fee" in page
    assert "Wallet ETH" in page
    assert "Withdrawn today (UTC) 150 ETH; no limit set" in page


# --- Vouchers -------------------------------------------------------------------------------


def _voucher(owner, sandbox) -> tuple[str, str]:
    """A new voucher's page and its code, as the payment service issued it."""
    url = submit(owner, "/vouchers/new", {"amount": "1", "currency": "USDT"}).location
    answer = requests.get(
        f"{sandbox.api_url}/vouchers/{url.rsplit('/', 1)[1]}", headers=sandbox.headers(), timeout=5
    )
    return url, answer.json()["data"]["code"]


@pytest.mark.parametrize(
    "typed",
    [
        lambda code: code.lower(),
        lambda code: "  " + code.replace("-", " ") + " ",
        lambda code: code.replace("-", " - ").lower(),
        lambda code: code.replace("-", "\t"),
    ],
    ids=["lower case", "spaces for dashes", "spaced dashes", "tabs"],
)
def test_a_voucher_code_is_found_whatever_its_case_and_spacing(owner, sandbox, typed):
    url, code = _voucher(owner, sandbox)
    paid = post(owner, "/vouchers/payoff", {"code": typed(code)})
    assert paid.status_code == 302, text(paid)[:400]
    assert paid.location == url
    assert "Redeemed" in text(owner.get(url))


def test_voucher_statuses_are_words_a_person_uses(owner, sandbox):
    active, _code = _voucher(owner, sandbox)
    redeemed, code = _voucher(owner, sandbox)
    canceled, _other = _voucher(owner, sandbox)
    assert post(owner, "/vouchers/payoff", {"code": code}).status_code == 302
    assert post(owner, canceled + "/cancel").status_code == 302

    status = re.compile(r"<dt>Status</dt><dd>(.*?)</dd>", re.S)
    words = {
        url: text_of(status.search(owner.get(url).get_data(as_text=True)).group(1))
        for url in (active, redeemed, canceled)
    }
    assert words == {active: "Active", redeemed: "Redeemed", canceled: "Canceled"}

    listing = text(owner.get("/vouchers"))
    for word in ("Active", "Redeemed", "Canceled"):
        assert word in listing
    assert "Successful" not in listing and "Cancelled" not in listing
    assert "Active or redeemed" in listing, "the status filter says what code 1 holds"


def test_expired_vouchers_read_expired(owner, sandbox):
    url, _code = _voucher(owner, sandbox)
    sandbox.control("POST", f"vouchers/{url.rsplit('/', 1)[1]}/expire")
    assert "Expired" in text(owner.get(url))


def text_of(fragment: str) -> str:
    return re.sub(r"<[^>]+>", "", fragment).strip()


# --- Accountants read the withdrawals list --------------------------------------------------


def test_accountants_read_the_withdrawals_list_and_nothing_more(app, accounts, owner, sandbox):
    address, review = review_withdrawal(owner, "0.25")
    assert post(owner, review + "/confirm").status_code == 302

    accountant = signed_in(app, accounts.accountant)
    listing = accountant.get("/withdrawals")
    assert listing.status_code == 200
    page = text(listing)
    assert "1 withdrawal " in page and address in page and "Sent (processed)" in page
    assert "New withdrawal" not in page and review not in listing.get_data(as_text=True)
    assert accountant.get("/withdrawals/new").status_code == 403
    assert accountant.get(review).status_code == 403
    assert post(accountant, review + "/confirm").status_code == 403
    menu = accountant.get("/").get_data(as_text=True)
    assert 'href="/withdrawals"' in menu, "the menu offers the list"

"""One home for what the portal knows of each currency (`portal.money.rules.currencies`): the
forms, the amounts on the pages and the customer's page read it there, and it agrees with the
sandbox's own copy wherever both say something."""

from __future__ import annotations

from decimal import Decimal

import pytest

from portal.money.pages.withdrawals.forms import WithdrawalForm
from portal.money.rules.currencies import (
    CURRENCY_CODES,
    KNOWN,
    WITHDRAWAL_WALLETS,
    address_shape,
    is_fiat,
)
from portal.payments.pages.checkout.routes import format_amount
from portal.payments.pages.operations.forms import NewOperationForm
from portal.web.fields import address_problem
from portal.web.formatting import money
from sandbox import currencies as sandbox_currencies

FIAT = sorted(code for code, currency in KNOWN.items() if not currency.crypto)
CRYPTO = sorted(code for code, currency in KNOWN.items() if currency.crypto)
# Addresses both the portal and the sandbox judge: mainnet and testnet of each shape, and near
# misses. (The portal also takes regtest's "bcrt1…", which the sandbox never hands out.)
SAMPLE_ADDRESSES = [
    "1BoatSLRHtKNngkdXEeobR76b53LETtpyT",
    "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy",
    "mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn",
    "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
    "tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx",
    "BC1QAR0SRRR7XFKVY5L643LYDNW9RE59GTZZWF5MDQ",
    "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdb",
    "0x52908400098527886E0F7030069857D2E4169EE7",
    "0x52908400098527886e0f7030069857d2e4169ee7",
    "0x52908400098527886E0F7030069857D2E4169EE",
    "52908400098527886E0F7030069857D2E4169EE7ab",
    "0x52908400098527886E0F7030069857D2E4169EZ7",
    "not an address",
]


@pytest.mark.parametrize("code", FIAT)
def test_every_fiat_currency_shows_its_cents_on_pages(code):
    assert money(Decimal(5), code) == f"5.00 {code}"
    assert money(Decimal("1234.5"), code) == f"1,234.50 {code}"


@pytest.mark.parametrize("code", CRYPTO)
def test_a_crypto_amount_shows_the_decimals_it_has(code):
    assert money(Decimal("5.00000000"), code) == f"5 {code}"
    assert money(Decimal("0.00000001"), code) == f"0.00000001 {code}"


def test_the_customers_page_shows_cents_up_to_the_apis_decimals(app):
    with app.test_request_context("/checkout/x"):
        assert format_amount(Decimal("0.5")) == "0.50"
        assert format_amount(Decimal("0.00000001")) == "0.00000001"


def test_no_fiat_currency_is_offered_as_a_payment_currency(app):
    """Whatever fiat currencies the rates list, the customer is asked to pay in crypto, and the
    option says which crypto currency a fiat price is paid in."""
    with app.test_request_context("/operations/new"):
        form = NewOperationForm(meta={"csrf": False})
        form.offer(sorted({*FIAT, *CRYPTO}))
    offered = [choice.value for choice in form.payment_currency.choices if choice.value]
    assert offered == sorted(CRYPTO)
    same = form.payment_currency.choices[0].label
    assert same == f"Same as the currency ({sorted(CRYPTO)[0]} for a price in {', '.join(FIAT)})"


def test_a_withdrawal_leaves_from_a_crypto_wallet_only(app):
    with app.test_request_context("/withdrawals/new"):
        form = WithdrawalForm(meta={"csrf": False})
    wallets = [choice.value for choice in form.wallet.choices if choice.value]
    assert wallets == list(WITHDRAWAL_WALLETS) == [c for c in CURRENCY_CODES if not is_fiat(c)]
    for code in CURRENCY_CODES:
        with app.test_request_context(
            "/withdrawals/new", method="POST", data={"amount": "1", "wallet": code}
        ):
            form = WithdrawalForm(meta={"csrf": False})
            form.validate()
        refused = any("cannot leave" in error for error in form.wallet.errors)
        assert refused == is_fiat(code), code


def test_the_portal_knows_the_sandboxs_currencies_as_the_sandbox_does():
    sandbox_known = sandbox_currencies.CURRENCIES
    assert set(CURRENCY_CODES) == set(sandbox_known)
    for code, currency in sandbox_known.items():
        assert KNOWN[code].crypto == currency.crypto, code
        assert is_fiat(code) == (not currency.crypto), code
    assert set(WITHDRAWAL_WALLETS) == set(sandbox_currencies.CRYPTO)


@pytest.mark.parametrize("code", sorted(sandbox_currencies.CURRENCIES))
def test_the_portal_judges_addresses_as_the_sandbox_does(code):
    shape = address_shape(code)
    for address in SAMPLE_ADDRESSES:
        portal_takes = shape is not None and shape.fits(address)
        assert portal_takes == sandbox_currencies.is_valid_address(code, address), (code, address)


@pytest.mark.parametrize("code", list(sandbox_currencies.CRYPTO))
def test_every_address_the_sandbox_hands_out_fits_the_portals_check(code):
    for _ in range(20):
        assert address_problem(code, sandbox_currencies.new_address(code)) is None


def test_a_refused_address_names_its_blockchain():
    assert address_problem("BTC", "0x" + "a" * 40) == (
        "Enter a Bitcoin address: it starts with 1, 3 or bc1 (2, m, n or tb1 on testnet)."
    )
    for code in ("ETH", "USDT"):
        assert address_problem(code, "tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx") == (
            "Enter an Ethereum address: 0x followed by 40 hexadecimal digits."
        )
    assert address_problem("XYZ", "with spaces in it") == "Enter the address without spaces."

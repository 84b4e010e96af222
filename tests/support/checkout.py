"""Operations whose redirect_url is the portal's checkout page, made as the portal makes them."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask

from portal.api import Operation


@dataclass(frozen=True)
class Checkout:
    """An operation and the checkout page customers return to."""

    token: str
    url: str
    operation: Operation


def new_checkout(
    app: Flask,
    merchant_name: str,
    *,
    amount: str = "25.5",
    order_id: str = "ORDER-1001",
    currency: str = "USD",
    payment_currency: str = "BTC",
) -> Checkout:
    """Reserve a link, create the operation with its URL as redirect_url, attach it."""
    from portal.identity.rules.accounts import merchant_named
    from portal.payments.pages.public_urls import checkout_url
    from portal.payments.rules.checkout_links import attach, reserve_link
    from portal.settings.rules.connection import api_client_for

    with app.test_request_context():
        merchant = merchant_named(merchant_name)
        link = reserve_link(merchant, order_id)
        url = checkout_url(link)
        operation = api_client_for(merchant).create_operation(
            amount, currency, order_id, payment_currency=payment_currency, redirect_url=url
        )
        attach(link, operation)
        return Checkout(link.token, url, operation)

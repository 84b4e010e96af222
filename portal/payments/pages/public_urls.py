"""Absolute URLs of the portal for people outside it: customers coming back from the payment
page. They start with PORTAL_PUBLIC_URL when it is set (behind a proxy that rewrites the host),
else with the address this request came to."""

from __future__ import annotations

from flask import current_app, request

from portal.payments.models import CheckoutLink
from portal.payments.rules.checkout_links import url_under


def checkout_url(link: CheckoutLink) -> str:
    """The checkout page of `link`, as the customer's browser is sent back to it."""
    return url_under(current_app.config.get("PUBLIC_URL") or request.url_root, link)

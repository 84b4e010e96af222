"""The merchant as customers see it: a display name, and the one shop URL the page links back to.

The page never sends a customer to an address taken from the request: only to the shop URL an
owner saved in settings, and checked again before each use.
"""

from __future__ import annotations

from portal.extensions import db
from portal.models import Merchant
from portal.rules.web_urls import is_web_url


def display_name(merchant: Merchant) -> str:
    return merchant.display_name or merchant.name


def return_url(merchant: Merchant) -> str | None:
    """Where "Return to the shop" goes, or None when the owner saved no usable URL."""
    return merchant.shop_url if is_web_url(merchant.shop_url) else None


def save_settings(merchant: Merchant, name: str | None, shop_url: str | None) -> None:
    """Store what the checkout page shows; empty values fall back (merchant name, no link)."""
    merchant.display_name = name or None
    merchant.shop_url = shop_url or None
    db.session.commit()

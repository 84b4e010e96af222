"""The merchant as customers see it: a display name, and the one shop URL the page links back to.

The page never sends a customer to an address taken from the request: only to the shop URL an
owner saved in settings, and checked again before each use.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from portal.extensions import db
from portal.models import Merchant


def display_name(merchant: Merchant) -> str:
    return merchant.display_name or merchant.name


def is_web_url(url: str | None) -> bool:
    """An absolute http(s) URL with a host and no spaces, control characters or backslashes."""
    if not url or any(ord(char) < 0x21 or char in "\\\x7f" for char in url):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def return_url(merchant: Merchant) -> str | None:
    """Where "Return to the shop" goes, or None when the owner saved no usable URL."""
    return merchant.shop_url if is_web_url(merchant.shop_url) else None


def save_settings(merchant: Merchant, name: str | None, shop_url: str | None) -> None:
    """Store what the checkout page shows; empty values fall back (merchant name, no link)."""
    merchant.display_name = name or None
    merchant.shop_url = shop_url or None
    db.session.commit()

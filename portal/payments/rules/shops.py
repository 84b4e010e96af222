"""The merchant as customers see it: a display name, the one shop URL the page links back to,
and an optional support e-mail address.

The page never sends a customer to an address taken from the request: only to the shop URL (or
the e-mail address) an owner saved in settings, and checked again before each use.
"""

from __future__ import annotations

import re

from portal.extensions import db
from portal.identity.models import Merchant
from portal.web_urls import is_web_url

# A plain address that a `mailto:` link carries as it is: no character that a mail program
# would read as a header (`?`, `&`) or that needs escaping, a domain with a dot.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_SUPPORT_EMAIL = re.compile(rf"[A-Za-z0-9._+-]{{1,64}}@{_LABEL}(?:\.{_LABEL})+")
SUPPORT_EMAIL_LENGTH = 254


def display_name(merchant: Merchant) -> str:
    return merchant.display_name or merchant.name


def return_url(merchant: Merchant) -> str | None:
    """Where "Return to the shop" goes, or None when the owner saved no usable URL."""
    return merchant.shop_url if is_web_url(merchant.shop_url) else None


def is_support_email(value: str | None) -> bool:
    return (
        value is not None
        and len(value) <= SUPPORT_EMAIL_LENGTH
        and _SUPPORT_EMAIL.fullmatch(value) is not None
    )


def support_email(merchant: Merchant) -> str | None:
    """Where customers write with questions, or None when the owner saved no usable address."""
    return merchant.support_email if is_support_email(merchant.support_email) else None


def save_settings(
    merchant: Merchant, name: str | None, shop_url: str | None, email: str | None
) -> None:
    """Store what the checkout page shows; empty values fall back (merchant name, no link, no
    support address)."""
    merchant.display_name = name or None
    merchant.shop_url = shop_url or None
    merchant.support_email = email or None
    db.session.commit()

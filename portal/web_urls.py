"""Addresses on the web that the portal sends people or shops to."""

from __future__ import annotations

from urllib.parse import urlsplit


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

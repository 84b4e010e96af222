"""The static files a page names (its stylesheet and scripts), as a browser reads them from the
page: for the static-file tests and the load test's browser cache."""

from __future__ import annotations

import html
import re

_STATIC_URL = re.compile(r'(?:href|src)="(/static/[^"]+)"')


def static_urls(page: str) -> list[str]:
    """The URLs under /static/ that the page's `href` and `src` attributes name, unescaped."""
    return [html.unescape(url) for url in _STATIC_URL.findall(page)]

"""The headers htmx sends, for requests made as the page's scripts would make them."""

from __future__ import annotations

HTMX = {"HX-Request": "true"}

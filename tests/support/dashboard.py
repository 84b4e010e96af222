"""The dashboard's figures as a person reads them: the text of an element found by its id."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"br", "img", "input", "meta", "link", "hr", "source", "wbr", "area", "col"}


@dataclass
class Found:
    """The visible text of one element, its parts apart by a space (hidden helper text for
    screen readers left out), and the links inside it."""

    text: str = ""
    links: list[str] = field(default_factory=list)


class _ById(HTMLParser):
    def __init__(self, element_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.element_id = element_id
        self.found: Found | None = None
        self.depth = 0  # open elements inside the one found (0: not inside)
        self.hidden_at = 0  # the depth at which a visually hidden span began (0: none)
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if self.depth == 0 and self.found is None and attributes.get("id") == self.element_id:
            self.found, self.depth = Found(), 1
            return
        if self.depth and tag not in VOID:
            self.parts.append(" ")  # cells and items read apart
            self.depth += 1
            if not self.hidden_at and "visually-hidden" in (attributes.get("class") or ""):
                self.hidden_at = self.depth
            if tag == "a" and self.found is not None:
                self.found.links.append(attributes.get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if self.depth and tag not in VOID:
            self.parts.append(" ")
            if self.hidden_at == self.depth:
                self.hidden_at = 0
            self.depth -= 1
            if self.depth == 0 and self.found is not None:
                self.found.text = re.sub(r"\s+", " ", "".join(self.parts)).strip()

    def handle_data(self, data: str) -> None:
        if self.depth and not self.hidden_at:
            self.parts.append(data)


def element(page: str, element_id: str) -> Found:
    """The element of `page` with this id; AssertionError when the page has none."""
    parser = _ById(element_id)
    parser.feed(page)
    assert parser.found is not None, f"no element #{element_id} on the page"
    return parser.found


def figure(page: str, element_id: str) -> str:
    """The visible text of the element with this id (`figure-net`: "1,000.00 USD · previous…")."""
    return element(page, element_id).text


def amount(page: str, element_id: str) -> str:
    """The headline amount of a figure: its text before the comparison (`1,000.00 USD`)."""
    return figure(page, element_id).partition(" · ")[0]

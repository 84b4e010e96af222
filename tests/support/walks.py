"""The pages of the portal, computed from its registry of features (portal/web/features.py) and
its url_map, for the tests that walk every page: the access matrix, the bad-input walk, and the
phone and accessibility walk. A new feature's pages are found here without editing any test.

A page is a GET route of a registered feature that answers HTML: not a file (`.csv`, `.xlsx`),
nor an answer for programs (`/healthz`, JSON). A page whose URL holds a variable is reached by
the browser walks through a link on a page visited before (a list links to its records), so it
shows a real record; a link token stands in for any value (an unknown one shows the page that
says the link is not valid).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urlsplit

from cryptography.fernet import Fernet
from flask import Flask
from playwright.sync_api import Page
from werkzeug.exceptions import HTTPException
from werkzeug.routing import MapAdapter, Rule

from portal.identity.models import Role
from portal.web.access import PUBLIC, access_of
from portal.web.features import features_of

FILES = (".csv", ".xlsx")
# URL variables any value of which opens a page: a one-time link's token.
ANY_VALUE = {"token": "an-unknown-link-token"}


def site(**config: object) -> Flask:
    """The portal's application as `create_app` builds it, for its url_map and features only:
    no database behind it."""
    from portal import create_app

    return create_app(
        {
            "TESTING": True,
            "SECRET_KEY": "walks",
            "TOKEN_KEYS": Fernet.generate_key().decode(),
            "DATABASE_URL": "sqlite://",
            "QUEUE_URL": "memory://",
            **config,
        }
    )


@dataclass(frozen=True)
class PageRoute:
    endpoint: str
    rule: str
    arguments: frozenset[str]

    @property
    def needs_a_record(self) -> bool:
        return bool(self.arguments - ANY_VALUE.keys())

    def path(self) -> str:
        """The page's path with each variable that any value opens filled in."""
        path = self.rule
        for name, value in ANY_VALUE.items():
            path = path.replace(f"<{name}>", value)
        return path


def feature_routes(app: Flask) -> list[Rule]:
    """Every route of every registered feature, in the url_map's order."""
    features = features_of(app)
    return [
        rule
        for rule in app.url_map.iter_rules()
        if any(feature.owns(rule.endpoint) for feature in features)
    ]


def pages(app: Flask, visitor: Role | None) -> list[PageRoute]:
    """The pages `visitor` may open (None: someone signed out, who may open the public ones),
    as the views' own `@roles` and `@public` say."""
    found = []
    with app.app_context():
        for rule in feature_routes(app):
            access = access_of(rule.endpoint)
            opens = access == PUBLIC if visitor is None else visitor in (access or ())
            if "GET" in (rule.methods or ()) and opens and not rule.rule.endswith(FILES):
                found.append(PageRoute(rule.endpoint, rule.rule, frozenset(rule.arguments)))
    return found


def walk(
    page: Page, app: Flask, routes: Iterable[PageRoute], check, links: Iterable[str] = ()
) -> list[PageRoute]:
    """Open each page in the browser and `check(page)` it; the pages with a record are opened
    through the first link to them found on the pages opened before (or among `links`, paths
    seen before the walk). Returns the pages no link led to."""
    adapter = app.url_map.bind("portal.test")
    waiting = [route for route in routes if route.needs_a_record]
    links = list(links)
    for route in routes:
        if not route.needs_a_record:
            links += _open(page, route.path(), check)
    while waiting:
        reached = [(route, path) for route in waiting if (path := _link_to(adapter, route, links))]
        if not reached:
            break
        for route, path in reached:
            waiting.remove(route)
            links += _open(page, path, check)
    return waiting


def _open(page: Page, path: str, check) -> list[str]:
    answer = page.goto(path)
    if answer is None or "text/html" not in answer.headers.get("content-type", ""):
        return []  # an answer for programs (`/healthz`), not a page
    check(page)
    return links_on(page)


def links_on(page: Page) -> list[str]:
    """The paths of the portal's links on the page, the page's own first."""
    hrefs = page.locator("a[href]").evaluate_all("links => links.map(link => link.href)")
    here = urlsplit(page.url).netloc
    own = [urlsplit(href).path for href in hrefs if urlsplit(href).netloc == here]
    return [urlsplit(page.url).path, *own]


def _link_to(adapter: MapAdapter, route: PageRoute, links: list[str]) -> str | None:
    for path in links:
        try:
            endpoint, _ = adapter.match(path, method="GET")
        except HTTPException:  # a link to no page of the portal
            continue
        if endpoint == route.endpoint:
            return path
    return None


@dataclass(frozen=True)
class HtmlField:
    """A field as a page draws it: its kind (`date`, `number`, `choice` or `text`) and, for a
    choice, the values offered."""

    name: str
    kind: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class HtmlForm:
    method: str
    action: str
    fields: tuple[HtmlField, ...]


class _FormReader(HTMLParser):
    def __init__(self, page_path: str) -> None:
        super().__init__()
        self.page_path = page_path
        self.forms: list[HtmlForm] = []
        self._form: dict | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        name = attributes.get("name", "")
        if tag == "form":
            action = urlsplit(attributes.get("action") or self.page_path).path
            self._form = {"method": attributes.get("method", "get").lower(), "action": action}
            self._form["fields"] = {}
        elif self._form is None or (not name and tag != "option"):
            return
        elif tag == "select":
            self._select = name
            self._add(HtmlField(name, "choice"))
        elif tag == "option" and self._select:
            field = self._form["fields"][self._select]
            choices = (*field.choices, attributes.get("value", ""))
            self._form["fields"][self._select] = HtmlField(field.name, "choice", choices)
        elif tag in ("input", "textarea"):
            kind = attributes.get("type", "text")
            if kind in ("checkbox", "radio"):
                known = self._form["fields"].get(name, HtmlField(name, "choice"))
                choices = (*known.choices, attributes.get("value", "on"))
                self._form["fields"][name] = HtmlField(name, "choice", choices)
            elif kind not in ("submit", "button"):
                numeric = kind == "number" or attributes.get("inputmode") in ("decimal", "numeric")
                self._add(
                    HtmlField(name, "date" if kind == "date" else "number" if numeric else "text")
                )

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "form" and self._form is not None:
            fields = tuple(self._form["fields"].values())
            self.forms.append(HtmlForm(self._form["method"], self._form["action"], fields))
            self._form = None

    def _add(self, field: HtmlField) -> None:
        assert self._form is not None
        self._form["fields"].setdefault(field.name, field)


def forms_on(html: str, page_path: str) -> list[HtmlForm]:
    """The forms of a page as a browser would send them: method, action path and fields."""
    reader = _FormReader(page_path)
    reader.feed(html)
    return reader.forms

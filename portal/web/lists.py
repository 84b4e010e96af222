"""List pages: the API's lists behind their filter form, and the portal's own lists, paged.

`render_list` shows an API list for the filters in the query string (`portal.web.filters`);
`local_page` pages a list kept in the portal's database, by key (Previous/Next).
"""

from __future__ import annotations

import json
from base64 import urlsafe_b64decode, urlsafe_b64encode
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import sqlalchemy as sa
from flask import current_app, request, url_for
from sqlalchemy.sql import operators
from werkzeug.wrappers import Response

from portal.api import ApiRefusal, MerchantApiClient, Page, PageReader
from portal.database import COUNTED
from portal.extensions import db
from portal.web.api_errors import handle_api_error, read_or_mirror
from portal.web.filters import ListFilters, ListQuery, read_filters
from portal.web.formatting import counted
from portal.web.merchant import current_api
from portal.web.rendering import polled_by, render_page, wants_fragment

# The element of a list page that asks for the results again while a row can still change; its
# requests leave the address bar alone.
LIVE_RESULTS = "results-live"


def record_url(endpoint: str, name: str) -> Callable[[object], str]:
    """What `url_for(endpoint, **{name: value})` gives, for the many records of a list page.

    The address is built once around a placeholder; each value is then quoted by the rule's
    converter, as url_for quotes it (a `<name>` variable: the default converter). A page of 50
    rows builds one address instead of 50.
    """
    placeholder = "RECORD-PLACEHOLDER"
    values: dict[str, Any] = {name: placeholder}
    prefix, _, suffix = url_for(endpoint, **values).rpartition(placeholder)
    quote = current_app.url_map.converters["default"](current_app.url_map).to_url
    return lambda value: f"{prefix}{quote(value)}{suffix}"


# A cursor longer than this is none the portal wrote (it holds a timestamp and an id).
MAX_CURSOR = 200
# The integers a cursor may hold: those a 64-bit integer column holds.
INT64 = range(-(2**63), 2**63)


@dataclass(frozen=True)
class LocalPage:
    """A page of a list in the portal's own database (`local_page`): its rows, how many the
    list holds (counted up to COUNTED + 1), the cursors of its Previous and Next links (None:
    no such page), and the query arguments that show this page again (none for the first)."""

    items: list[Any]
    total: int
    before: str | None
    after: str | None
    here: dict[str, str]

    @property
    def counted(self) -> str:
        """How many rows the list holds, as its heading says it."""
        return counted(self.total)


@dataclass(frozen=True)
class _Key:
    """What a list is sorted by: its ORDER BY's columns, all descending or all ascending."""

    columns: tuple[sa.ColumnElement[Any], ...]
    descending: bool

    @classmethod
    def of(cls, query: sa.Select) -> _Key:
        """The key of `query`, read from the ORDER BY its rule gives (for the page and the
        export alike); the last column must tell rows apart (an id). SQLAlchemy has no public
        reader of a Select's ORDER BY: `_order_by_clauses` is it."""
        columns, directions = [], set()
        for clause in query._order_by_clauses:
            modifier = getattr(clause, "modifier", None)
            sorted_by = operators.desc_op, operators.asc_op
            columns.append(clause.element if modifier in sorted_by else clause)
            directions.add(modifier is operators.desc_op)
        if not columns or len(directions) > 1:
            raise ValueError("a list paged by key is ordered by columns, all one direction")
        return cls(tuple(columns), directions.pop())

    def rows(self, query: sa.Select, limit: int, start: tuple = (), forward: bool = True) -> list:
        """Up to `limit` rows of `query` after the key `start` (before it, nearest first, when
        not `forward`), each with its key's values after its own columns."""
        ascending = forward != self.descending
        if start:
            typed = (
                sa.literal(value, column.type)
                for column, value in zip(self.columns, start, strict=True)
            )
            row, cursor = sa.tuple_(*self.columns), sa.tuple_(*typed)
            query = query.where(row > cursor if ascending else row < cursor)
        order = [column if ascending else column.desc() for column in self.columns]
        query = query.order_by(None).order_by(*order).add_columns(*self.columns)
        return list(db.session.execute(query.limit(limit)))

    def cursor(self, row: sa.Row) -> str:
        """The key of `row` (as `rows` reads it) as URL-safe text."""
        values = [
            v.isoformat() if isinstance(v, datetime) else v for v in row[-len(self.columns) :]
        ]
        return (
            urlsafe_b64encode(json.dumps(values, separators=(",", ":")).encode())
            .decode()
            .rstrip("=")
        )

    def start(self, cursor: str) -> tuple | None:
        """The key a cursor of `cursor` holds; None for text the portal did not write."""
        if len(cursor) > MAX_CURSOR:
            return None
        try:
            values = json.loads(urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
            if not isinstance(values, list) or len(values) != len(self.columns):
                return None
            return tuple(map(_key_value, self.columns, values))
        except (ValueError, TypeError, OverflowError):
            return None


def _key_value(column: sa.ColumnElement[Any], value: object) -> object:
    """`value`, read from a cursor, as `column` holds it: an aware timestamp or an integer."""
    kind = column.type
    if isinstance(kind, sa.TypeDecorator):
        kind = kind.impl_instance
    if isinstance(kind, sa.DateTime) and isinstance(value, str):
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            raise ValueError("a timestamp without its zone")
        return moment.astimezone(UTC)
    if isinstance(kind, sa.Integer) and type(value) is int and value in INT64:
        return value
    raise ValueError("not a key of this list")


def local_page(query: sa.Select, per_page: int = 50) -> LocalPage:
    """The page of `query` (a list of one model in the portal's own database) asked for by
    `?after=` (Next: the rows after that cursor), `?before=` (Previous) or neither (the first).

    It is read by key, never by offset: a cursor holds the key (the query's ORDER BY, such as
    `created_at DESC, id DESC`) of the row the page starts next to, so a deep page costs what
    the first costs, and rows written meanwhile do not shift it. A cursor the portal did not
    write shows the first page, and so does Previous to less than a page. The rows are counted
    up to COUNTED + 1 only, for the same reason.
    """
    key = _Key.of(query)
    counted = query.order_by(None).limit(COUNTED + 1).subquery()
    total = db.session.scalar(sa.select(sa.func.count()).select_from(counted)) or 0
    after, before = request.args.get("after", ""), request.args.get("before", "")
    if (start := key.start(after)) is not None:
        rows = key.rows(query, per_page + 1, start)
        more, rows = len(rows) > per_page, rows[:per_page]
        return _page(key, rows, total, key.cursor(rows[0]) if rows else after, more, after=after)
    if (start := key.start(before)) is not None:
        rows = key.rows(query, per_page + 1, start, forward=False)
        if len(rows) > per_page:
            rows = rows[:per_page][::-1]
            return _page(key, rows, total, key.cursor(rows[0]), True, before=before)
    rows = key.rows(query, per_page + 1)
    return _page(key, rows[:per_page], total, None, len(rows) > per_page)


def _page(
    key: _Key, rows: list, total: int, previous: str | None, more: bool, **here: str
) -> LocalPage:
    """The page of `rows` (as `_Key.rows` reads them), with Next when there are `more`."""
    after = key.cursor(rows[-1]) if more and rows else None
    return LocalPage([row[0] for row in rows], total, previous, after, here)


@dataclass(frozen=True)
class Mirrored:
    """How a list reads the portal's copy while the API does not answer: a page for the
    filters it can answer (`filters`, sorts by the names in `sorts`)."""

    read: Callable[..., Page[Any]]
    filters: frozenset[str]
    sorts: frozenset[str]


@dataclass(frozen=True)
class ApiList:
    """A list of the API as a page shows it: its filter form, how a client asks for a page of
    it (`MerchantApiClient.fetch_page` or a rule built on it), the page's template with the
    fragment htmx asks for, and how it reads the mirror while the API is down (None: it
    does not)."""

    filters: type[ListFilters]
    fetch: Callable[[MerchantApiClient], Callable[..., PageReader[Any]]]
    template: str
    fragment: str
    mirror: Callable[[], Mirrored] | None = None


UNANSWERED = (
    "The payment service does not answer, so this list comes from the portal's copy, which "
    "cannot filter or sort by {}: left out."
)


def _from_mirror(mirrored: Mirrored, query: ListQuery) -> Page[Any]:
    """The list's page read from the mirror, for the filters it answers; the form says which
    it left out."""
    assert query.filters is not None  # valid filters only
    filters = dict(query.filters)
    left_out = [name for name in filters if name not in mirrored.filters]
    if filters.get("sort") not in (None, *mirrored.sorts):
        left_out += ["sort", "sort_type"]
    if left_out:
        labels = [query.form[name].label.text for name in left_out if name in query.form]
        query.form.form_errors.append(UNANSWERED.format(", ".join(dict.fromkeys(labels))))
    return mirrored.read(**{name: filters[name] for name in filters if name not in left_out})


def render_list(listing: ApiList, **context: object) -> Response:
    """A list page (or, for htmx, its results) for the filters in the query string.

    The htmx answer also carries the field errors out of band and the canonical URL to push,
    so that the address bar, back, forward and reload show the same list.
    """
    query = read_filters(listing.filters, request.args)
    page = None
    if query.filters is not None:
        filters = query.filters
        read = lambda: listing.fetch(current_api())(**filters)()  # noqa: E731
        try:
            if listing.mirror is None:
                page = read()
            else:
                page = read_or_mirror(read, partial(_from_mirror, listing.mirror(), query))
        except ApiRefusal as refusal:  # no answer: the error page, there is nothing to show
            refused = handle_api_error(refusal, query.form)
            if refused.error:
                query.form.form_errors.append(refused.error)
    response = render_page(
        listing.template,
        listing.fragment,
        200 if page is not None else 422,
        form=query.form,
        page=page,
        out_of_band=wants_fragment(),
        **context,
    )
    if wants_fragment() and not polled_by(LIVE_RESULTS):
        response.headers["HX-Push-Url"] = url_for(request.endpoint or "", **query.form.query_args())
    return response

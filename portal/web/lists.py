"""List pages: the API's lists behind their filter form, and the portal's own lists, paged.

`render_list` shows an API list for the filters in the query string (`portal.web.filters`);
`local_page` pages a list kept in the portal's database.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import sqlalchemy as sa
from flask import current_app, request, url_for
from flask_sqlalchemy.pagination import Pagination
from werkzeug.wrappers import Response

from portal.api import ApiRefusal, MerchantApiClient, Page, PageReader
from portal.extensions import db
from portal.web.api_errors import handle_api_error, read_or_mirror
from portal.web.filters import MAX_PAGE, ListFilters, ListQuery, read_filters
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


def local_page(query: sa.Select, per_page: int = 50) -> Pagination:
    """The page of `query` (a list in the portal's own database) asked for by `?page=`.

    A page that is not a whole number, or is below 1, is the first; one above MAX_PAGE is
    MAX_PAGE, empty as any page after the last (the database's integers cannot hold the offset
    of any page number).
    """
    page = request.args.get("page", 1, type=int)
    return db.paginate(
        query,
        page=min(page, MAX_PAGE) if page >= 1 else 1,
        per_page=per_page,
        max_per_page=per_page,
        error_out=False,
    )


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

"""Rendering a view's answer: the whole page, or for an htmx request only its fragment.

Every view returns a `Response`; `render_page` and `page` make one from a template.
"""

from __future__ import annotations

from flask import make_response, render_template, request
from htmx_flask.requests import HtmxHeaders
from werkzeug.wrappers import Response


def wants_fragment() -> bool:
    """An htmx request for part of a page (boosted navigation still gets the whole page)."""
    htmx = HtmxHeaders(request.headers)  # what `request.htmx` holds, typed
    return bool(htmx) and not htmx.boosted


def polled_by(element_id: str) -> bool:
    """An htmx request made by the element `element_id`: a poller that refreshes part of a page
    by itself (the answer must not push the address or take the person's choices away)."""
    return wants_fragment() and request.headers.get("HX-Trigger") == element_id


def render_page(template: str, fragment: str, status: int = 200, **context: object) -> Response:
    """The full page, or for an htmx request only the fragment that the page includes."""
    response = make_response(
        render_template(fragment if wants_fragment() else template, **context), status
    )
    response.vary.add("HX-Request")
    response.vary.add("HX-Boosted")
    return response


def page(template: str, status: int = 200, **context: object) -> Response:
    """A page that has no fragment of its own: the same template for every request."""
    return render_page(template, template, status, **context)

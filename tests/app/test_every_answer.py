"""Every route of url_map, by every method, for every visitor, as a page, an htmx fragment and
a boosted page, on the portal whose records hold markup and formulas: each answer is read once
and checked for everything an attack on any route could break.

- Below 500, with the security headers (CSP with frame-ancestors, nosniff, a Referrer-Policy),
  whatever the answer (page, fragment, redirect, 401, 403, 404, 400 for a missing CSRF token,
  CSV, static file).
- Nothing in an HTML answer could run script: the hostile records are shown as text.
- No secret of the portal, in any encoding, in an answer or a log record.
- The reads (GET, HEAD, OPTIONS) change nothing, neither the portal's rows nor the sandbox's: a
  cross-site read (an <img>) needs no CSRF token because it can do nothing.

The attacks of one kind (a CSRF token forged, a redirect's target, a secret in an error page)
have their own modules: test_csrf.py, test_redirects.py, test_secrets.py, test_hostile_strings.py,
test_security_headers.py.
"""

from __future__ import annotations

import pytest

from tests.support.attack import (
    STATE_CHANGING,
    VISITORS,
    active_content,
    header_problems,
    snapshot,
    transcript_of,
    url_of,
)
from tests.support.htmx import HTMX

# A GET as a page, as a fragment for htmx, and as a page htmx asked for (a boosted link).
GET_KINDS = ({}, HTMX, {**HTMX, "HX-Boosted": "true"})


def _requests(hostile) -> tuple[list[tuple[str, str, dict]], list[tuple[str, str, dict]]]:
    """(method, url, headers) of every route: the reads, then the requests that change state."""
    reads, changes = [], []
    for rule in hostile.app.url_map.iter_rules():
        url = url_of(hostile.app, rule, hostile.ids)
        for method in sorted(rule.methods or ()):
            kinds = GET_KINDS if method == "GET" else ({},)
            requests = changes if method in STATE_CHANGING else reads
            requests += [(method, url, headers) for headers in kinds]
    return reads, changes


@pytest.mark.slow  # every route by every method for every visitor
@pytest.mark.parametrize("visitor", VISITORS)
def test_every_answer_to_every_visitor(hostile, caplog, visitor):
    client = hostile.client(visitor)
    transcript = transcript_of(hostile, caplog)
    reads, changes = _requests(hostile)
    problems: list[str] = []
    statuses: set[int] = set()

    def ask(method: str, url: str, headers: dict) -> None:
        response = client.open(url, method=method, headers=headers)
        what = f"{method} {url} {headers}"
        statuses.add(response.status_code)
        if response.status_code >= 500:
            problems.append(f"{what}: {response.status_code}")
        problems.extend(f"{what}: {problem}" for problem in header_problems(response))
        if response.mimetype == "text/html":
            html = response.get_data(as_text=True)
            problems.extend(f"{what}: {found}" for found in active_content(html))
        transcript.add(what, response)
        response.close()

    # The first page after signing in asks for the time zone once, and remembers that it asked.
    client.get("/").close()
    before = snapshot(hostile)
    for request in reads:
        ask(*request)
    assert snapshot(hostile) == before, "a read changed something"
    for request in changes:
        ask(*request)
    assert problems == []
    assert {200, 302}.issubset(statuses)
    transcript.assert_no_secret()

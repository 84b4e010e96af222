"""The stylesheet and scripts under URLs that name their content: a browser keeps them a year
and asks for them once, and a file that changes gets another URL (portal/web/static_files.py)."""

from __future__ import annotations

import hashlib
import os
import re
from urllib.parse import parse_qs, urlsplit

from portal.web.static_files import KEPT_FOR_A_YEAR, version
from tests.support.forms import signed_in
from tests.support.sandbox_server import ROOT

STATIC_URL = re.compile(r'(?:href|src)="(/static/[^"]+)"')


def test_every_static_url_of_a_page_names_its_content_and_may_be_kept_a_year(app, accounts):
    client = signed_in(app, accounts.owner)
    urls = STATIC_URL.findall(client.get("/account").text)
    assert len(urls) == 7  # the stylesheet, htmx and the portal's five scripts
    for url in urls:
        address = urlsplit(url.replace("&amp;", "&"))
        (named,) = parse_qs(address.query)["v"]
        content = (ROOT / address.path.lstrip("/")).read_bytes()
        assert named == hashlib.sha256(content).hexdigest()[:12], url
        answer = client.get(url)
        assert answer.status_code == 200
        assert answer.data == content
        assert answer.headers["Cache-Control"] == KEPT_FOR_A_YEAR
        assert "Set-Cookie" not in answer.headers
        assert "Vary" not in answer.headers  # one copy for every visitor in a shared cache


def test_a_static_url_without_the_current_version_is_checked_again_each_time(client):
    for url in ("/static/portal.css", "/static/portal.css?v=0123456789ab"):
        answer = client.get(url)
        assert answer.status_code == 200
        assert answer.headers["Cache-Control"] == "no-cache", url
        again = client.get(url, headers={"If-None-Match": answer.headers["ETag"]})
        assert again.status_code == 304
        assert again.headers["Cache-Control"] == "no-cache", url


def test_a_missing_file_gets_no_version_and_is_not_found(app, client):
    with app.test_request_context():
        from flask import url_for

        assert url_for("static", filename="nothing.css") == "/static/nothing.css"
    assert client.get("/static/nothing.css").status_code == 404


def test_a_file_whose_content_changes_gets_another_version(tmp_path):
    path = tmp_path / "portal.css"
    path.write_text("main { color: black }")
    first = version(path)
    path.write_text("main { color: white }")  # as long, perhaps within the same tick
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert version(path) != first
    path.write_text("main { color: black }")
    assert version(path) == first

"""The stylesheet and scripts under URLs that name their content: a browser keeps them a year
and asks for them once, and a file that changes gets another URL (portal/web/static_files.py)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from portal.web.static_files import KEPT_FOR_A_YEAR, version
from tests.support.forms import signed_in
from tests.support.static_urls import static_urls

CHECKED_AGAIN = "no-cache"  # Flask's answer for a static file: the browser asks each time


def _static_urls(client, page: str = "/login") -> dict[str, str]:
    """The static URLs of `page`, by the file's name in the static folder."""
    urls = static_urls(client.get(page).text)
    return {urlsplit(url).path.removeprefix("/static/"): url for url in urls}


def test_every_static_url_of_a_page_names_its_content_and_may_be_kept_a_year(app, accounts):
    client = signed_in(app, accounts.owner)
    urls = _static_urls(client, "/account")
    assert len(urls) == 7  # the stylesheet, htmx and the portal's five scripts
    for name, url in urls.items():
        (named,) = parse_qs(urlsplit(url).query)["v"]
        content = (Path(app.static_folder) / name).read_bytes()
        assert named == hashlib.sha256(content).hexdigest()[:12], url
        answer = client.get(url)
        assert answer.status_code == 200
        assert answer.data == content
        assert answer.headers["Cache-Control"] == KEPT_FOR_A_YEAR
        assert "Vary" not in answer.headers  # one copy for every visitor in a shared cache
        again = client.get(url, headers={"If-None-Match": answer.headers["ETag"]})
        assert (again.status_code, again.headers["Cache-Control"]) == (304, KEPT_FOR_A_YEAR)
        assert client.head(url).headers["Cache-Control"] == KEPT_FOR_A_YEAR


def test_a_static_url_without_the_current_version_is_checked_again_each_time(client):
    for url in ("/static/portal.css", "/static/portal.css?v=0123456789ab"):
        answer = client.get(url)
        assert answer.status_code == 200
        assert answer.headers["Cache-Control"] == CHECKED_AGAIN, url
        again = client.get(url, headers={"If-None-Match": answer.headers["ETag"]})
        assert again.status_code == 304
        assert again.headers["Cache-Control"] == CHECKED_AGAIN, url


def test_a_file_changed_while_the_portal_runs_gets_a_new_url(app, tmp_path):
    """A page opened before the change keeps the old URL: its file is checked again, and the
    new URL serves the new content, kept a year."""
    shutil.copytree(app.static_folder, tmp_path / "static")
    app.static_folder = str(tmp_path / "static")
    client = app.test_client()
    before = _static_urls(client)["portal.css"]
    stylesheet = tmp_path / "static" / "portal.css"
    stylesheet.write_text(stylesheet.read_text() + "\nmain { margin: 0 }\n")
    after = _static_urls(client)["portal.css"]
    assert after != before
    assert client.get(before).headers["Cache-Control"] == CHECKED_AGAIN
    answer = client.get(after)
    assert answer.data == stylesheet.read_bytes()
    assert answer.headers["Cache-Control"] == KEPT_FOR_A_YEAR


def test_a_missing_file_or_a_folder_gets_no_version(app, client):
    from flask import url_for

    with app.test_request_context():
        assert url_for("static", filename="nothing.css") == "/static/nothing.css"
        assert url_for("static", filename="js") == "/static/js"  # a folder
        assert url_for("static", filename="../pyproject.toml") == "/static/../pyproject.toml"
    assert client.get("/static/nothing.css").status_code == 404


def test_a_file_rewritten_with_its_size_and_modification_time_gets_another_version(tmp_path):
    """As `cp -p` or rsync may leave it: only its change time tells."""
    path = tmp_path / "portal.css"
    path.write_text("main { color: black }")
    first, modified = version(path), path.stat().st_mtime_ns
    path.write_text("main { color: white }")
    os.utime(path, ns=(modified, modified))
    assert version(path) != first
    path.write_text("main { color: black }")
    assert version(path) == first

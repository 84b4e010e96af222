"""Static files under URLs that name their content, so that browsers keep them.

Flask answers `static/` with `Cache-Control: no-cache`: a browser asked again for the
stylesheet and each script on every page it opened, one conditional request each (eight requests
for one page view). Every static URL the portal builds now carries a version drawn from the
file's content (`?v=`), and a request naming the file's current version is answered as
cacheable for a year and immutable: the browser asks once, and a deployment that changes a
file gives it a new URL. A URL without the version, or with another one (a page cached before
a deployment), is still served, revalidated as before.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from flask import Flask, Response, current_app, request
from werkzeug.security import safe_join

VERSION_ARGUMENT = "v"
KEPT_FOR_A_YEAR = "public, max-age=31536000, immutable"


def version(path: Path) -> str:
    """The version of a file's content: its digest, read again whenever the file's inode, size,
    modification or change time differ (a copy that keeps the modification time, as `cp -p`
    or rsync make, still changes the change time, which no program sets)."""
    stat = path.stat()
    return _digest(path, (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns))


@functools.lru_cache(maxsize=256)
def _digest(path: Path, _identity: tuple[int, int, int, int]) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def _current_version(filename: str) -> str | None:
    """The version of `filename` in the static folder; None when there is no such file."""
    folder = current_app.static_folder
    found = safe_join(folder, filename) if folder else None
    if found is None:
        return None
    try:
        return version(Path(found))
    except OSError:  # no such file, a folder, or a file removed meanwhile by a deployment
        return None


def _add_version(endpoint: str, values: dict) -> None:
    """`url_for('static', filename=…)` names the file's current version."""
    if endpoint == "static" and VERSION_ARGUMENT not in values:
        current = _current_version(values.get("filename", ""))
        if current is not None:
            values[VERSION_ARGUMENT] = current


def _keep_when_current(response: Response) -> Response:
    """A static file asked for by its current version may be kept for a year."""
    if request.endpoint == "static" and response.status_code in (200, 304):
        asked = request.args.get(VERSION_ARGUMENT)
        filename = (request.view_args or {}).get("filename", "")
        if asked is not None and asked == _current_version(filename):
            response.headers["Cache-Control"] = KEPT_FOR_A_YEAR
    return response


def init_app(app: Flask) -> None:
    """Version the static URLs the app builds, and let browsers keep what those URLs name."""
    app.url_defaults(_add_version)
    app.after_request(_keep_when_current)

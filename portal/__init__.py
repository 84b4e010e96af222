"""The merchant portal: a Flask application in front of the Merchant API v1."""

from __future__ import annotations

import functools
import importlib.util
import os
import pkgutil
from collections.abc import Iterable
from pathlib import Path

from flask import Flask

from portal import cli
from portal.config import load_config
from portal.extensions import csrf, db, htmx, limiter, login_manager
from portal.identity.rules import attempts
from portal.live.worker import queue
from portal.payments.pages import rows, state_badges
from portal.web import (
    access,
    api_errors,
    errors,
    features,
    formatting,
    i18n,
    navigation,
    security,
    sessions,
    static_files,
)

ROOT = Path(__file__).resolve().parent.parent


def create_app(test_config: dict | None = None) -> Flask:
    """Build the portal; `test_config` replaces the `PORTAL_*` environment variables."""
    app = Flask(
        __name__,
        instance_path=os.environ.get("PORTAL_INSTANCE_PATH") or None,
        instance_relative_config=True,
        template_folder=str(ROOT / "templates"),
        static_folder=str(ROOT / "static"),
    )
    Path(app.instance_path).mkdir(parents=True, exist_ok=True)
    load_config(app, test_config)

    security.init_app(app)
    static_files.init_app(app)
    db.init_app(app)
    login_manager.init_app(app)
    htmx.init_app(app)
    sessions.init_app(app)  # who acts, before any hook may load the user
    app.before_request(access.enforce)  # before CSRF: the signed-out go to the sign-in page
    csrf.init_app(app)
    limiter.init_app(app)
    attempts.init_app(app)
    i18n.init_app(app)

    features.register(app, discover_features())

    errors.init_app(app)
    api_errors.init_app(app)
    formatting.init_app(app)
    state_badges.init_app(app)
    rows.init_app(app)
    navigation.init_app(app)
    queue.init_app(app)
    cli.init_app(app)
    return app


@functools.cache
def discover_features() -> tuple[features.Feature, ...]:
    """The `feature` of every page package: `portal/<subsystem>/pages/` when it is one blueprint
    (settings), else each package in it. A page package without a `feature` is refused rather
    than left unregistered.

    Found once per process: the packages and their features are modules and module-level
    objects, the same for every application (scanning the folders took 1.8 ms of each
    `create_app`, which the tests call thousands of times)."""
    found = []
    for subsystem in _package_names(__path__, __name__):
        if importlib.util.find_spec(f"{subsystem}.pages") is None:
            continue
        pages = importlib.import_module(f"{subsystem}.pages")
        names = (
            [pages.__name__]
            if hasattr(pages, "bp")
            else _package_names(pages.__path__, pages.__name__)
        )
        for name in names:
            feature = getattr(importlib.import_module(name), "feature", None)
            if not isinstance(feature, features.Feature):
                raise LookupError(f"{name} declares no `feature` (portal.web.features)")
            found.append(feature)
    return tuple(found)


def _package_names(path: Iterable[str], parent: str) -> list[str]:
    """The names of the packages directly in `parent` (found at `path`), in order."""
    return sorted(
        f"{parent}.{module.name}" for module in pkgutil.iter_modules(path) if module.ispkg
    )

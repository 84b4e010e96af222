"""The merchant portal: a Flask application in front of the Merchant API v1."""

from __future__ import annotations

import os
from pathlib import Path

from flask import Flask

from portal import access, cli, errors, layout, security
from portal.config import load_config
from portal.extensions import csrf, db, htmx, limiter, login_manager, migrate

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
    db.init_app(app)
    migrate.init_app(app, db, directory=str(ROOT / "migrations"), render_as_batch=True)
    login_manager.init_app(app)
    htmx.init_app(app)
    app.before_request(access.enforce)  # before CSRF: the signed-out go to the sign-in page
    csrf.init_app(app)
    limiter.init_app(app)

    from portal.auth import bp as auth_bp
    from portal.dashboard import bp as dashboard_bp
    from portal.settings import bp as settings_bp

    app.register_blueprint(auth_bp)
    app.register_blueprint(dashboard_bp)
    app.register_blueprint(settings_bp, url_prefix="/settings")

    errors.init_app(app)
    layout.init_app(app)
    cli.init_app(app)
    return app

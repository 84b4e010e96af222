"""The merchant portal: a Flask application in front of the Merchant API v1."""

from __future__ import annotations

import os
from pathlib import Path

from flask import Flask

from portal import cli
from portal.config import load_config
from portal.extensions import csrf, db, htmx, limiter, login_manager, migrate
from portal.identity.rules import attempts
from portal.live.worker import queue
from portal.payments.models import is_modelled
from portal.payments.pages import progress_badges, rows
from portal.web import access, errors, formatting, i18n, navigation, security, sessions

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
    migrate.init_app(
        app,
        db,
        directory=str(ROOT / "migrations"),
        render_as_batch=True,
        include_name=is_modelled,  # `flask db migrate` leaves the search indexes of 0014 alone
    )
    login_manager.init_app(app)
    htmx.init_app(app)
    sessions.init_app(app)  # who acts, before any hook may load the user
    app.before_request(access.enforce)  # before CSRF: the signed-out go to the sign-in page
    csrf.init_app(app)
    limiter.init_app(app)
    attempts.init_app(app)
    i18n.init_app(app)

    from portal.identity.pages.account import bp as account_bp
    from portal.identity.pages.audit_log import bp as audit_log_bp
    from portal.identity.pages.auth import bp as auth_bp
    from portal.money.pages.cross_exchanges import bp as cross_exchanges_bp
    from portal.money.pages.exchanges import bp as exchanges_bp
    from portal.money.pages.vouchers import bp as vouchers_bp
    from portal.money.pages.withdrawals import bp as withdrawals_bp
    from portal.payments.pages.attention import bp as attention_bp
    from portal.payments.pages.checkout import bp as checkout_bp
    from portal.payments.pages.dashboard import bp as dashboard_bp
    from portal.payments.pages.operations import bp as operations_bp
    from portal.payments.pages.rates import bp as rates_bp
    from portal.payments.pages.search import bp as search_bp
    from portal.payments.pages.transactions import bp as transactions_bp
    from portal.settings.pages import bp as settings_bp

    app.register_blueprint(auth_bp)
    app.register_blueprint(dashboard_bp)
    app.register_blueprint(operations_bp, url_prefix="/operations")
    app.register_blueprint(transactions_bp, url_prefix="/transactions")
    app.register_blueprint(rates_bp)
    app.register_blueprint(account_bp)
    app.register_blueprint(checkout_bp, url_prefix="/checkout")
    app.register_blueprint(settings_bp, url_prefix="/settings")
    app.register_blueprint(withdrawals_bp, url_prefix="/withdrawals")
    app.register_blueprint(vouchers_bp, url_prefix="/vouchers")
    app.register_blueprint(exchanges_bp, url_prefix="/exchange")
    app.register_blueprint(cross_exchanges_bp, url_prefix="/cross-exchanges")
    app.register_blueprint(audit_log_bp, url_prefix="/audit")
    app.register_blueprint(attention_bp)
    app.register_blueprint(search_bp)

    errors.init_app(app)
    formatting.init_app(app)
    progress_badges.init_app(app)
    rows.init_app(app)
    navigation.init_app(app)
    queue.init_app(app)
    cli.init_app(app)
    return app

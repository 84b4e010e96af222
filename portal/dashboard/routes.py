"""The signed-in home page, and `/healthz` for load balancers."""

from __future__ import annotations

from flask import render_template
from flask_login import current_user

from portal.access import ALL_ROLES, public, roles
from portal.dashboard import bp
from portal.services.api import masked_tokens


@bp.route("/")
@roles(*ALL_ROLES)
def index() -> str:
    """The merchant at a glance: who you are and how the portal reaches the API."""
    connection = current_user.merchant.api_connection
    return render_template(
        "dashboard/index.html",
        connection=connection,
        token_mask=masked_tokens(connection)[0] if connection else None,
    )


@bp.route("/healthz")
@public
def healthz() -> dict[str, str]:
    """Liveness: the process answers (no login, no database, no API call)."""
    return {"status": "ok"}

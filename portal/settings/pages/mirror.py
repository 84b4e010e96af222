"""The mirror of the API on the API settings page: how it stands, and a button that has the
worker read everything again (a full resync) at its next tick."""

from __future__ import annotations

from flask import flash, redirect, url_for
from flask_login import current_user
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response

from portal.identity.models import Role
from portal.identity.rules import audit
from portal.live.rules import mirror
from portal.settings.pages import bp
from portal.web.access import roles


class ResyncForm(FlaskForm):
    """The button alone: the form carries the CSRF token."""


@bp.context_processor
def mirror_panel() -> dict[str, object]:
    """What templates/settings/_mirror.html reads; functions, so only a page that includes the
    panel queries the mirror."""
    return {
        "mirror_status": lambda: mirror.status_of(current_user.merchant_id),
        "resync_form": lambda: ResyncForm(formdata=None),
    }


@bp.route("/api/resync", methods=["POST"])
@roles(Role.OWNER)
def resync_mirror() -> Response:
    """Ask for a full resync of the owner's merchant; the worker's next tick runs it. Audited:
    a resync notifies every change it finds."""
    if ResyncForm().validate_on_submit() and mirror.request_full_resync(current_user.merchant_id):
        audit.record("mirror.resync")
        flash(
            "A full resync is requested: the worker reads everything again at its next tick.",
            "success",
        )
    else:
        refusal = "Connect to the payment service first: the mirror needs a connection."
        audit.record("mirror.resync", error=refusal)
        flash(refusal, "error")
    return redirect(url_for("settings.api"))

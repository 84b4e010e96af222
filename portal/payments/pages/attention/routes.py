"""`/attention`: the items of the mirror that wait for a decision, grouped by reason.

The actions are the operations pages' own forms (Link selected, Reject selected with a
reason), posted to its URLs with one transaction ticked: its page then asks for confirmation,
as everywhere, and sends nothing before. Accountants see no buttons (and that page refuses them).
"""

from __future__ import annotations

from flask import current_app
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.payments.pages.attention import bp
from portal.payments.rules import attention
from portal.web.access import ALL_ROLES, may_open, roles
from portal.web.rendering import page


@bp.get("/attention")
@roles(*ALL_ROLES)
def index() -> Response:
    return page(
        "attention/index.html",
        groups=attention.needs_attention(current_user.merchant_id),
        may_act=may_open("operations.link_transactions"),
        sync_seconds=current_app.config["SYNC_SECONDS"],
    )

"""The statement page: the period asked for in the reader's zone, its statement."""

from __future__ import annotations

from datetime import datetime

from flask import request
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.database import utcnow
from portal.identity.models import Role
from portal.periods import Period, Preset
from portal.reports.pages.statement import bp
from portal.reports.rules.statement import statement
from portal.web.access import roles
from portal.web.formatting import user_zone, user_zone_name
from portal.web.periods import PeriodForm
from portal.web.rendering import page

PRESETS = (Preset.YESTERDAY, Preset.SEVEN_DAYS, Preset.THIS_MONTH, Preset.LAST_MONTH)
DEFAULT_PRESET = Preset.LAST_MONTH


@bp.route("")
@roles(Role.OWNER, Role.ACCOUNTANT)
def index() -> Response:
    """The statement of the period asked for; a period still running ends now."""
    zone = user_zone()
    form = PeriodForm(request.args, PRESETS, DEFAULT_PRESET)
    since, until, preset, refused = form.days(datetime.now(zone).date())
    begins, ends = Period(since, until, zone).instants
    merchant = current_user.merchant
    return page(
        "statement/index.html",
        form=form,
        preset=preset,
        period_title=form.title(since, until, preset),
        period_error=refused,
        zone_name=user_zone_name(),
        statement=statement(merchant, begins, min(ends, utcnow())),
        connected=merchant.api_connection is not None,
    )

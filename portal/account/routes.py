"""`/account`: any signed-in user chooses the time zone in which the portal shows times."""

from __future__ import annotations

from flask import flash, redirect, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.access import ALL_ROLES, roles
from portal.account import bp
from portal.account.forms import TimeZoneForm
from portal.extensions import db
from portal.layout import render_page


@bp.route("/account", methods=["GET", "POST"])
@roles(*ALL_ROLES)
def index() -> Response:
    form = TimeZoneForm(time_zone=current_user.time_zone)
    if form.validate_on_submit():
        current_user.time_zone = form.time_zone.data
        db.session.commit()
        flash(f"Times are now shown in {form.time_zone.data}.", "success")
        return redirect(url_for("account.index"))
    status = 422 if form.is_submitted() else 200
    return render_page("account/index.html", "account/index.html", status, form=form)

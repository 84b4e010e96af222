"""The audit log pages: read and export only."""

from __future__ import annotations

from collections.abc import Iterator

from flask import request, stream_with_context
from flask_login import current_user
from werkzeug.wrappers import Response
from wtforms import SelectChoice

from portal.extensions import db
from portal.identity.models import Role
from portal.identity.pages.audit_log import bp, queries
from portal.identity.pages.audit_log.forms import AuditFilterForm
from portal.identity.pages.audit_log.queries import describe_parameters
from portal.identity.rules.audit import ACTIONS, OUTCOMES
from portal.web.access import roles
from portal.web.lists import local_page
from portal.web.rendering import page


def _filters() -> tuple[AuditFilterForm, dict | None]:
    """The filter form and, when valid, the filters it holds (None: show nothing)."""
    form = AuditFilterForm(request.args)
    form.user.choices = [SelectChoice("", "Anyone")] + [
        SelectChoice(email, email) for email in queries.users_of(current_user.merchant)
    ]
    if not form.validate():
        return form, None
    return form, {
        "user": form.user.data or None,
        "action": form.action.data or None,
        "date_from": form.date_from.data,
        "date_to": form.date_to.data,
    }


@bp.route("")
@roles(Role.OWNER)
def index() -> Response:
    form, filters = _filters()
    if filters is None:
        return page("audit_log/index.html", 422, form=form, page=None)
    return page(
        "audit_log/index.html",
        form=form,
        page=local_page(queries.events(current_user.merchant, **filters)),
        query={name: value for name, value in filters.items() if value},
        actions=ACTIONS,
        outcomes=OUTCOMES,
        describe=describe_parameters,
    )


@bp.route("/export.csv")
@roles(Role.OWNER)
def export() -> Response:
    """Every event matching the filters, as CSV."""
    form, filters = _filters()
    if filters is None:
        return page("audit_log/index.html", 422, form=form, page=None)
    query = queries.events(current_user.merchant, **filters).execution_options(yield_per=500)

    def rows() -> Iterator[str]:
        # Read inside the stream: the view's database session ends when the view returns.
        yield from queries.csv_rows(db.session.scalars(query))

    return Response(
        stream_with_context(rows()),
        mimetype="text/csv",
        headers={"Content-Disposition": 'attachment; filename="audit-log.csv"'},
    )

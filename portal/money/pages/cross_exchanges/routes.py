"""Cross exchange pages: the portal's list and a look-up by id, create, detail, cancel."""

from __future__ import annotations

from functools import partial

from flask import flash, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import ApiFailure, CrossExchange, ErrorCode
from portal.identity.models import Role
from portal.identity.rules import audit
from portal.money.models import IntentKind
from portal.money.pages.cross_exchanges import bp
from portal.money.pages.cross_exchanges.forms import (
    CancelCrossExchangeForm,
    CrossExchangeForm,
    LookUpForm,
)
from portal.money.rules import cross_exchanges
from portal.reports.rules.csv_rows import CROSS_EXCHANGE_COLUMNS
from portal.web.access import ALL_ROLES, roles
from portal.web.api_errors import Check, handle_api_error, record_or_404
from portal.web.exports import local_list_download
from portal.web.idempotent_forms import IdempotentForm, send
from portal.web.lists import local_page
from portal.web.merchant import current_api
from portal.web.rendering import page, render_page

MOVERS = (Role.OWNER, Role.OPERATOR)
CROSS_EXCHANGE = IdempotentForm(
    IntentKind.CROSS_EXCHANGE,
    form_endpoint="cross_exchanges.new",
    # The API lists no cross exchanges, and the portal keeps only those whose answer arrived.
    check="with the payment service whether it made the cross exchange",
    check_url=lambda _parameters: None,
    record_url=lambda cross_id: url_for("cross_exchanges.show", cross_exchange_id=cross_id),
)


@bp.route("")
@roles(*ALL_ROLES)
def index() -> Response:
    """The cross exchanges created through the portal; a valid id looked up opens its page."""
    looking_up = "id" in request.args
    lookup = LookUpForm(formdata=request.args if looking_up else None)
    if looking_up and lookup.validate():
        return redirect(url_for("cross_exchanges.show", cross_exchange_id=lookup.id.data))
    listed = local_page(cross_exchanges.of(current_user.merchant))
    status = 422 if lookup.errors else 200
    return page("cross_exchanges/index.html", status, lookup=lookup, page=listed)


@bp.route("/new", methods=["GET", "POST"])
@roles(*MOVERS)
def new() -> Response:
    """Create a cross exchange once per form shown, and keep its id in the portal's list."""
    form = CrossExchangeForm()
    if not form.validate_on_submit():
        return page("cross_exchanges/new.html", 422 if form.is_submitted() else 200, form=form)
    parameters = {
        **form.amounts(),
        "sell_address": form.sell_address.data,
        "buy_address": form.buy_address.data,
    }
    create = partial(current_api().create_cross_exchange, **parameters)
    try:
        created = send(CROSS_EXCHANGE, form.intent.data, parameters, create)
    except ApiFailure as failure:
        refused = handle_api_error(failure, form)
        return page("cross_exchanges/new.html", refused.status, form=form, error=refused.error)
    cross_exchanges.remember(current_user.merchant, current_user, created)
    flash(f"Cross exchange {created.id} is created and awaits payment.", "success")
    return redirect(url_for("cross_exchanges.show", cross_exchange_id=created.id))


def _cross_exchange(cross_exchange_id: str) -> CrossExchange:
    """The cross exchange from the API; its own 404 page when the API does not know the id."""
    return record_or_404(
        partial(current_api().get_cross_exchange, cross_exchange_id),
        ErrorCode.CROSS_EXCHANGE_NOT_FOUND,
        "Cross exchange not found",
    )


@bp.route("/<cross_exchange_id>")
@roles(*ALL_ROLES)
def show(cross_exchange_id: str) -> Response:
    """Status, amounts, where to pay, and the time left (for htmx: the status part only); one
    looked up by its id joins the portal's list."""
    cross_exchange = _cross_exchange(cross_exchange_id)
    cross_exchanges.look_up(current_user.merchant, current_user, cross_exchange)
    return render_page(
        "cross_exchanges/show.html",
        "cross_exchanges/_status.html",
        cross_exchange=cross_exchange,
        addresses=cross_exchanges.entered_addresses(current_user.merchant, cross_exchange.id),
    )


@bp.route("/<cross_exchange_id>/cancel", methods=["GET", "POST"])
@roles(*MOVERS)
def cancel(cross_exchange_id: str) -> Response:
    """Ask for confirmation on its own page, then cancel."""
    cross_exchange = _cross_exchange(cross_exchange_id)
    form = CancelCrossExchangeForm()
    if not form.validate_on_submit():
        return page("cross_exchanges/cancel.html", form=form, cross_exchange=cross_exchange)
    url = url_for("cross_exchanges.show", cross_exchange_id=cross_exchange.id)
    try:
        with audit.recorded("cross_exchange.cancel", {"cross_exchange_id": cross_exchange.id}):
            current_api().cancel_cross_exchange(cross_exchange.id)
    except ApiFailure as failure:
        refused = handle_api_error(failure, form, Check("the cross exchange", url))
        return page(
            "cross_exchanges/cancel.html",
            refused.status,
            form=form,
            cross_exchange=cross_exchange,
            error=refused.error,
        )
    flash(f"Cross exchange {cross_exchange.id} is canceled.", "success")
    return redirect(url)


@bp.get("/export.csv")
@bp.get("/export.xlsx", endpoint="export_xlsx")
@roles(*ALL_ROLES)
def export_csv() -> Response:
    """Every cross exchange created through the portal."""
    return local_list_download(
        cross_exchanges.of(current_user.merchant), "cross-exchanges", CROSS_EXCHANGE_COLUMNS
    )

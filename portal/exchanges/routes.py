"""/exchange: the exchange rates for everyone; the form, its live quote and the result for
those who move money."""

from __future__ import annotations

from functools import partial

from flask import flash, redirect, request, session, url_for
from werkzeug.wrappers import Response

from portal.api import ApiFailure
from portal.exchanges import bp
from portal.exchanges.forms import ExchangeForm
from portal.models import IntentKind, Role
from portal.rules.quotes import quote
from portal.rules.rates import rate_rows
from portal.web.access import ALL_ROLES, roles
from portal.web.formatting import money
from portal.web.merchant import current_api
from portal.web.one_time import OneTimeForm, send
from portal.web.pages import render_page
from portal.web.refusals import meet

RESULT_KEY = "exchange_result"
EXCHANGE = OneTimeForm(
    IntentKind.EXCHANGE,
    form_endpoint="exchanges.exchange",
    check="your wallet balances with the payment service",
    check_url=lambda _parameters: None,  # the portal shows no balances: only the service can
    record_url=None,  # the API shows no exchange again
)


def _page(form: ExchangeForm, status: int = 200, error: str | None = None) -> Response:
    """The rates, the form with its quote (for htmx: only the quote), and the last result."""
    rates = current_api().get_exchange_rates()
    offer = quote(rates, **form.amounts()) if form.quotable() else None
    return render_page(
        "exchanges/index.html",
        "exchanges/_quote.html",
        status,
        form=form,
        rows=rate_rows(rates),
        quote=offer,
        error=error,
        result=session.pop(RESULT_KEY, None) if request.method == "GET" else None,
    )


@bp.route("", methods=["GET"])
@roles(*ALL_ROLES)
def exchange() -> Response:
    """The page; with the form's values in the query, the quote for them."""
    form = ExchangeForm(formdata=request.args or None, meta={"csrf": False})
    if request.args:
        form.validate()
    return _page(form)


@bp.route("", methods=["POST"])
@roles(Role.OWNER, Role.OPERATOR)
def create() -> Response:
    """Make the exchange once per form shown; the result is shown on the page it redirects to."""
    form = ExchangeForm()
    if not form.validate():
        return _page(form, 422)
    try:
        call = partial(current_api().create_exchange, **form.amounts())
        done = send(EXCHANGE, form.intent.data, form.amounts(), call)
    except ApiFailure as failure:
        refused = meet(failure, form)
        return _page(form, refused.status, refused.error)
    session[RESULT_KEY] = {
        "id": done.id,
        "sell": money(done.sell_amount, done.sell_currency),
        "buy": money(done.buy_amount, done.buy_currency),
        "rate": money(done.rate) if done.rate is not None else None,
        "fee": money(done.fee) if done.fee is not None else None,
        "status": done.status,
    }
    flash("The exchange is done.", "success")
    return redirect(url_for("exchanges.exchange"))

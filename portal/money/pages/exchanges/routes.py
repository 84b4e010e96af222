"""/exchange: the exchange rates for everyone; the form, its live quote, its review and the
result for those who move money; the exchanges made through the portal for everyone."""

from __future__ import annotations

from functools import partial

from flask import flash, redirect, request, session, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import ApiFailure
from portal.identity.models import Role
from portal.money.models import IntentKind
from portal.money.pages.exchanges import bp
from portal.money.pages.exchanges.forms import ExchangeForm
from portal.money.rules import exchanges
from portal.money.rules.currencies import exchange_currencies
from portal.money.rules.quotes import quote
from portal.payments.rules.rates import rate_rows
from portal.web.access import ALL_ROLES, roles
from portal.web.api_errors import handle_api_error
from portal.web.formatting import money
from portal.web.idempotent_forms import IdempotentForm, send
from portal.web.lists import local_page
from portal.web.merchant import current_api
from portal.web.rendering import page, render_page

RESULT_KEY = "exchange_result"
EXCHANGE = IdempotentForm(
    IntentKind.EXCHANGE,
    form_endpoint="exchanges.exchange",
    check="your wallet balances with the payment service",
    check_url=lambda _parameters: None,  # the portal shows no balances: only the service can
    record_url=None,  # the API shows no exchange again
)


def _page(form: ExchangeForm, status: int = 200, error: str | None = None) -> Response:
    """The rates, the form with its quote, and the last result. Only the live quote (`exchange`)
    answers htmx with the quote alone: a review or a sending shown again is the whole page, with
    the form's errors."""
    rates = current_api().get_exchange_rates()
    for currency in (form.sell_currency, form.buy_currency):
        currency.offer(exchange_currencies(rates))
    offer = quote(rates, **form.amounts()) if form.quotable() else None
    live = request.endpoint == "exchanges.exchange"
    context = {
        "form": form,
        "rows": rate_rows(rates),
        "quote": offer,
        "error": error,
        "result": session.pop(RESULT_KEY, None) if live else None,
    }
    if live:
        return render_page("exchanges/index.html", "exchanges/_quote.html", status, **context)
    return page("exchanges/index.html", status, **context)


@bp.route("", methods=["GET"])
@roles(*ALL_ROLES)
def exchange() -> Response:
    """The page; with the form's values in the query, the quote for them."""
    form = ExchangeForm(formdata=request.args or None, meta={"csrf": False})
    if request.args:
        form.validate()
    return _page(form)


@bp.route("/review", methods=["GET"])
@roles(Role.OWNER, Role.OPERATOR)
def review() -> Response:
    """What the exchange would give at the rate now, before anything is sent (a GET: it changes
    nothing, and a reload asks nothing); **Confirm exchange** posts the same deal and key to
    `create`."""
    form = ExchangeForm(formdata=request.args, meta={"csrf": False})
    if not form.validate():
        return _page(form, 422)
    offer = quote(current_api().get_exchange_rates(), **form.amounts())
    if offer is None:
        pair = f"{form.sell_currency.data} to {form.buy_currency.data}"
        form.buy_currency.errors.append(f"There is no exchange rate for {pair}: choose another.")
        return _page(form, 422)
    return page("exchanges/review.html", form=form, quote=offer)


@bp.route("", methods=["POST"])
@roles(Role.OWNER, Role.OPERATOR)
def create() -> Response:
    """Make the reviewed exchange once per form shown; the result is shown on the page it
    redirects to, and kept in the list of exchanges made through the portal."""
    form = ExchangeForm()
    if not form.validate():
        return _page(form, 422)
    user = current_user._get_current_object()
    try:
        call = partial(exchanges.make, current_api(), user.merchant, user, **form.amounts())
        done = send(EXCHANGE, form.intent.data, form.amounts(), call)
    except ApiFailure as failure:
        refused = handle_api_error(failure, form)
        return _page(form, refused.status, refused.error)
    sold = done.sell_currency or form.sell_currency.data
    session[RESULT_KEY] = {
        "id": done.id,
        "sell": money(done.sell_amount, sold),
        "buy": money(done.buy_amount, done.buy_currency or form.buy_currency.data),
        "rate": money(done.rate) if done.rate is not None else None,
        "fee": money(done.fee, sold) if done.fee is not None else None,  # taken from the sale
        "status": done.status,
    }
    flash("The exchange is done.", "success")
    return redirect(url_for("exchanges.exchange"))


@bp.route("/made")
@roles(*ALL_ROLES)
def made() -> Response:
    """The exchanges made through the portal, as the payment service answered them."""
    return page("exchanges/made.html", page=local_page(exchanges.made_by(current_user.merchant)))

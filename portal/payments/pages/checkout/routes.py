"""Public pages for customers: no login, rate-limited per address, only the payment's own facts.

`/checkout/<token>` serves the full page and, for htmx's polling, the payment fragment it
includes; `/checkout/<token>/pay` goes back to the hosted payment page while it can take money.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from flask import current_app, redirect, request, url_for
from flask_babel import format_decimal, get_locale, gettext
from flask_babel import lazy_gettext as _l
from werkzeug.exceptions import InternalServerError, NotFound
from werkzeug.wrappers import Response

from portal.money.rules.currencies import AMOUNT_DECIMALS, FIAT_DECIMALS
from portal.payments.models import CheckoutLink
from portal.payments.pages.checkout import bp
from portal.payments.pages.checkout.outcomes import CODE_PARAMETERS, notice_for, outcome_for
from portal.payments.pages.checkout.payments import Payment, payment_of
from portal.payments.rules.checkout_links import find_link, is_expired, recovered
from portal.payments.rules.shops import display_name, return_url, support_email
from portal.web.access import public
from portal.web.i18n import (
    CUSTOMER_LOCALES,
    LANGUAGE_COOKIE,
    LANGUAGE_NAMES,
    LANGUAGE_PARAMETER,
)
from portal.web.rendering import render_page
from portal.web.security import (
    ControlCharacterRefused,
    customer_page_limit,
    private_page_headers,
)

POLL_SECONDS = 5
checkout_limit = customer_page_limit()


class LinkExpired(NotFound):
    """The link is older than PORTAL_CHECKOUT_LINK_DAYS."""


# Pages for what went wrong: a title and a sentence, with no data of any payment.
MESSAGES = {
    "not_found": (
        _l("Payment page not found"),
        _l(
            "This link is not valid. Check that you have the whole address, or go back to the "
            "shop where you ordered."
        ),
    ),
    "expired": (
        _l("This link has expired"),
        _l(
            "Links to a payment's result work for a limited time. Contact the shop where you "
            "ordered if you have questions about your payment."
        ),
    ),
    "busy": (
        _l("Too many requests"),
        _l("Please wait a minute, then reload this page."),
    ),
    "error": (
        _l("Something went wrong"),
        _l("Please try again in a moment."),
    ),
}


def _open(token: str) -> CheckoutLink:
    """The link of the token, if it shows an operation and has not expired; else 404."""
    link = find_link(token)
    if link is None or (link.operation_id is None and not recovered(link)):
        raise NotFound()
    if is_expired(link):
        raise LinkExpired()
    return link


def _this_url() -> str:
    """The request's own path and query: htmx polls the very URL the customer opened."""
    path = request.script_root + request.path
    return f"{path}?{request.query_string.decode('latin-1')}" if request.query_string else path


@dataclass(frozen=True)
class Language:
    """One choice of the page's language switch."""

    code: str
    name: str
    url: str
    current: bool


def _languages(token: str) -> list[Language]:
    """The page in each language: its redirect code kept, nothing else taken from the query."""
    codes: dict[str, Any] = {
        name: request.args.getlist(name) for name in CODE_PARAMETERS if name in request.args
    }
    current = str(get_locale())
    return [
        Language(
            code,
            LANGUAGE_NAMES[code],
            url_for(".show", token=token, **codes | {LANGUAGE_PARAMETER: code}),
            code == current,
        )
        for code in CUSTOMER_LOCALES
    ]


def _remember_language(response: Response, token: str) -> None:
    """A language chosen on the page stays for this link (and only this link) on later visits."""
    chosen = request.args.get(LANGUAGE_PARAMETER)
    if chosen not in CUSTOMER_LOCALES:
        return
    response.set_cookie(
        LANGUAGE_COOKIE,
        chosen,
        max_age=int(float(current_app.config["CHECKOUT_LINK_DAYS"]) * 86400),
        path=f"{request.script_root}/checkout/{token}",
        secure=bool(current_app.config.get("SESSION_COOKIE_SECURE")) or request.is_secure,
        httponly=True,
        samesite="Lax",
    )


def _words(payment: Payment, shop: str) -> dict[str, str]:
    """What the sentences of the page may name: the shop, what was due and paid, what is left
    and what was paid too much."""
    return {
        "shop": shop,
        "due": _money(payment.due, payment.currency_paid),
        "paid": _money(payment.paid, payment.currency_paid),
        "left": _money(payment.left, payment.currency_paid) or gettext("the rest"),
        "surplus": _money(payment.surplus, payment.currency_paid),
    }


def _as_of(payment: Payment) -> str | None:
    """When the mirror's copy the page shows was read: the time in UTC, and the date unless
    it is today's."""
    if payment.as_of is None:
        return None
    moment = payment.as_of.astimezone(UTC)
    shown = "%H:%M" if moment.date() == datetime.now(UTC).date() else "%Y-%m-%d %H:%M"
    return moment.strftime(shown) + " UTC"


def _money(amount: Decimal | None, currency: str | None) -> str:
    return "" if amount is None else f"{format_amount(amount)} {currency or ''}".strip()


@bp.route("/<token>")
@public
@checkout_limit
def show(token: str) -> Response:
    """The payment's live state, headed by the words of that state; by the redirect code only
    while the API cannot be asked."""
    link = _open(token)
    payment = payment_of(link)
    shop = display_name(link.merchant)
    response = render_page(
        "checkout/page.html",
        "checkout/_payment.html",
        token=token,
        outcome=outcome_for(payment, request.args),
        notice=notice_for(payment, request.args),
        payment=payment,
        words=_words(payment, shop),
        as_of=_as_of(payment),
        shop=shop,
        shop_url=return_url(link.merchant),
        support_email=support_email(link.merchant),
        languages=_languages(token),
        poll_url=_this_url(),
        poll_seconds=POLL_SECONDS,
    )
    _remember_language(response, token)
    return response


@bp.route("/<token>/pay")
@public
@checkout_limit
def pay(token: str) -> Response:
    """To the hosted payment page while the payment is open; otherwise back to its result."""
    payment = payment_of(_open(token))
    if not payment.payable:
        return redirect(url_for(".show", token=token), 303)
    target = payment.payment_url  # the API's hosted payment page (tested: no open redirect)
    assert target is not None  # payable: the URL is a web address
    return redirect(target, 303)


def _message(kind: str, status: int) -> Response:
    title, text = MESSAGES[kind]
    return render_page(
        "checkout/message.html", "checkout/_message.html", status, title=title, text=text
    )


@bp.errorhandler(NotFound)
def not_found(error: NotFound) -> Response:
    return _message("expired" if isinstance(error, LinkExpired) else "not_found", 404)


@bp.errorhandler(ControlCharacterRefused)
def control_character(error: ControlCharacterRefused) -> Response:
    """A control character never belongs in a customer's link: in the reference no link has
    one; in the query the customer gets their page without it (it reads only a status code)."""
    if error.field is None:
        return _message("not_found", 404)
    return redirect(url_for(request.endpoint or "", **(request.view_args or {})), 303)


@bp.errorhandler(429)
def too_many_requests(_error: Exception) -> Response:
    return _message("busy", 429)


@bp.errorhandler(InternalServerError)
def internal_error(_error: InternalServerError) -> Response:
    return _message("error", 500)


bp.after_request(private_page_headers)


@bp.context_processor
def customer_context() -> dict[str, object]:
    return {"locale": str(get_locale()), "format_amount": format_amount}


# Cents at least, fiat and crypto alike, and at most the API's decimals: "0.50", "0.000425".
AMOUNT_PATTERN = "#,##0." + "0" * FIAT_DECIMALS + "#" * (AMOUNT_DECIMALS - FIAT_DECIMALS)


def format_amount(amount: Decimal) -> str:
    """In the customer's number format (`AMOUNT_PATTERN`)."""
    return format_decimal(amount, format=AMOUNT_PATTERN)

"""The claim page: `/refund/<token>` asks the customer for an address once, then shows where
the refund stands. No sign-in; CSRF on its form; rate limited as the checkout page is (the same
counter per address); kept out of caches, search engines and Referer."""

from __future__ import annotations

from flask import flash, redirect, url_for
from flask_babel import get_locale, gettext
from werkzeug.exceptions import NotFound
from werkzeug.wrappers import Response

from portal.money.models import Refund
from portal.money.pages.refund_claims import bp
from portal.money.pages.refund_claims.forms import ClaimForm
from portal.money.rules import approvals, refunds
from portal.money.rules.currencies import address_shape
from portal.web.access import public
from portal.web.rendering import page
from portal.web.security import customer_page_limit, private_page_headers

claim_limit = customer_page_limit()


def _refund(token: str) -> Refund:
    refund = refunds.by_token(token)
    if refund is None:
        raise NotFound()
    return refund


@bp.route("/<token>", methods=["GET", "POST"])
@public
@claim_limit
def claim(token: str) -> Response:
    """The form while the refund waits for an address; a valid one claims it, once."""
    refund = _refund(token)
    form = ClaimForm()
    if not form.is_submitted():
        return _page(refund, form)
    if not form.validate() or not _fits(form, refund.currency):
        return _page(refund, form, 422)
    if approvals.claim_refund(refund, form.address.data):
        flash(
            gettext("Thank you: we have your address. Below is where your refund stands."),
            "success",
        )
        return redirect(url_for(".claim", token=token), 303)
    return _page(refund, ClaimForm(formdata=None), 409, already=True)


def _fits(form: ClaimForm, currency: str) -> bool:
    """The address has the shape of an address of the refund's currency."""
    shape = address_shape(currency)
    if shape is None or shape.fits(form.address.data):
        return True
    form.address.errors = [gettext("This is not a %(currency)s address.", currency=currency)]
    return False


def _page(refund: Refund, form: ClaimForm, status: int = 200, **shown: object) -> Response:
    return page(
        "refund_claims/claim.html",
        status,
        refund=refund,
        state=refunds.state_of(refund),
        form=form,
        locale=str(get_locale()),
        **shown,
    )


@bp.errorhandler(NotFound)
def not_found(_error: NotFound) -> Response:
    return page("refund_claims/missing.html", 404, locale=str(get_locale()))


bp.after_request(private_page_headers)

"""The address book's page and its changes."""

from __future__ import annotations

from decimal import Decimal

from flask import abort, flash, redirect, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.database import utcnow
from portal.identity.models import Role
from portal.money.models import BookAddress
from portal.money.pages.address_book import bp
from portal.money.pages.address_book.forms import (
    AddAddressForm,
    ApproveAddressForm,
    CoolingOffForm,
    RemoveAddressForm,
)
from portal.money.rules import address_book, controls
from portal.money.rules import limits as owner_limits
from portal.web.access import roles
from portal.web.controls import waits_words
from portal.web.rendering import page
from portal.web.step_up import form_refused

OWN_ADDRESS = "You added this address: an owner other than you must approve it."
NEW_OWNER = (
    "You became an owner through the portal less than 24 hours ago, or the owner who added the "
    "address made you one: another owner approves it."
)
NO_SECOND_FACTOR = "Turn on two-factor sign-in or add a passkey under Account to approve."


def _page(status: int = 200, **forms: object) -> Response:
    forms.setdefault("add_form", AddAddressForm(formdata=None))
    forms.setdefault("approve_form", ApproveAddressForm(formdata=None))
    hours = address_book.cooling_off(current_user.merchant).total_seconds() / 3600
    shown = Decimal(str(hours)).normalize()
    forms.setdefault("cooling_form", CoolingOffForm(formdata=None, hours=shown))
    return page(
        "address_book/index.html",
        status,
        entries=address_book.entries(current_user.merchant),
        remove_form=RemoveAddressForm(formdata=None),
        cooling_hours=hours,
        pending=controls.waiting(current_user.merchant),
        now=utcnow(),
        **forms,
    )


@bp.route("")
@roles(Role.OWNER, Role.OPERATOR)
def index() -> Response:
    """Every address of the book, with when money may go to it."""
    return _page()


@bp.post("")
@roles(Role.OWNER)
def add() -> Response:
    """Add an address: usable after the cooling-off, mailed to every owner."""
    form = AddAddressForm()
    if not form.validate_on_submit():
        return _page(422, add_form=form)
    try:
        entry = address_book.add(
            current_user._get_current_object(),
            form.currency.data,
            form.address.data,
            form.name.data,
        )
    except address_book.AddressRefused as refused:
        form.address.errors = [*form.address.errors, str(refused)]
        return _page(422, add_form=form)
    flash(f"{entry.name} is in the address book.", "success")
    return redirect(url_for(".index"))


def _entry(entry_id: int) -> BookAddress:
    entry = address_book.find(current_user.merchant, entry_id)
    if entry is None:
        abort(404)
    return entry


@bp.post("/<int:entry_id>/remove")
@roles(Role.OWNER)
def remove(entry_id: int) -> Response:
    """Remove an address at once: nothing more may go to it."""
    entry = _entry(entry_id)
    if not RemoveAddressForm().validate_on_submit():
        abort(400)
    address_book.remove(entry, current_user._get_current_object())
    flash(f"{entry.name} was removed from the address book.", "success")
    return redirect(url_for(".index"))


@bp.post("/<int:entry_id>/approve")
@roles(Role.OWNER)
def approve(entry_id: int) -> Response:
    """Another owner, with a fresh second factor, ends the cooling-off now."""
    entry = _entry(entry_id)
    form = ApproveAddressForm()
    user = current_user._get_current_object()
    if entry.added_by_id == user.id:
        form.form_errors.append(OWN_ADDRESS)
        return _page(403, approve_form=form)
    if owner_limits.held_owner(user, entry.added_by):
        form.form_errors.append(NEW_OWNER)
        return _page(403, approve_form=form)
    if not user.has_second_factor:
        form.form_errors.append(NO_SECOND_FACTOR)
        return _page(403, approve_form=form)
    status = form_refused(form, user, purpose="address_approval")
    if status:
        return _page(status, approve_form=form)
    if address_book.approve(entry, user):
        flash(f"{entry.name} may be used now.", "success")
    else:
        flash(f"{entry.name} may be used already.", "info")
    return redirect(url_for(".index"))


@bp.post("/cooling-off")
@roles(Role.OWNER)
def cooling_off() -> Response:
    """Set how long a new address waits, with a fresh second factor: longer at once, shorter
    once another owner approves (or after 48 hours for a single owner)."""
    form = CoolingOffForm()
    user = current_user._get_current_object()
    status = form_refused(form, user, purpose="cooling_off")
    if status:
        return _page(status, cooling_form=form)
    hours = form.hours.entered
    change = controls.change_cooling_off(user, hours)
    if change is None:
        flash(f"New addresses now wait {hours:f} hours.", "success")
    else:
        flash(waits_words(change, f"New addresses wait {hours:f} hours"), "info")
    return redirect(url_for(".index"))

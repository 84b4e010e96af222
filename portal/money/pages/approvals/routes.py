"""The approvals queue, one approval's page, and its decisions."""

from __future__ import annotations

from flask import abort, flash, redirect, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.identity.models import Role, User
from portal.money.models import Approval, ControlChange
from portal.money.pages.approvals import bp
from portal.money.pages.approvals.forms import (
    ApproveForm,
    CancelChangeForm,
    RejectForm,
    WithdrawRequestForm,
)
from portal.money.rules import address_book, approvals, controls, withdrawal_figures
from portal.money.rules import limits as owner_limits
from portal.web.access import roles
from portal.web.rendering import page
from portal.web.step_up import form_refused

OWN_REQUEST = "You asked for this yourself: an owner other than you must approve it."
NEW_OWNER = (
    "You became an owner through the portal less than 24 hours ago, or one of you made the "
    "other an owner, or one owner made you both: another owner approves this."
)
NO_SECOND_FACTOR = "Turn on two-factor sign-in or add a passkey under Account to approve."
PASSKEY_ONLY = "The owners require a passkey for approvals: add one under Account to approve."
BEYOND_STAFFS_REACH = {
    owner_limits.Reason.NO_RATE: "No fresh rate values this refund against the owners' limits now: "
    "approve it after the next sync reads the rates.",
    owner_limits.Reason.PER_DAY: "This refund would take today's money out above the owners' daily "
    "limit, and a member of staff asked for it: approve it on another day, or reject it and "
    "have an owner ask for it (another owner approves).",
}
ABOVE_STAFFS_REACH = (
    "This refund is above the owners' limits, and a member of staff asked for it: no single "
    "owner approves it. Reject it; an owner may ask for it, and another owner approves."
)


@bp.route("")
@roles(Role.OWNER)
def index() -> Response:
    """What waits for a decision, oldest first, each with its figures."""
    return _index()


def _index(status: int = 200, **forms: object) -> Response:
    merchant = current_user.merchant
    forms.setdefault("approve_form", ApproveForm(formdata=None))
    return page(
        "approvals/index.html",
        status,
        waiting=[
            (approval, _available(approval), _place(approval))
            for approval in approvals.waiting(merchant)
        ],
        changes=controls.waiting(merchant),
        cancel_form=CancelChangeForm(formdata=None),
        **forms,
    )


def _available(approval: Approval) -> object:
    return withdrawal_figures.available(current_user.merchant, approval.currency)


def _place(approval: Approval) -> address_book.Place | None:
    """The address's place in the address book (None: no address, a claim link's refund)."""
    if approval.address is None:
        return None
    return address_book.place(current_user.merchant, approval.currency, approval.address)


def _approval(approval_id: int) -> Approval:
    found = approvals.find(current_user.merchant, approval_id)
    if found is None:
        abort(404)
    return found


def _show(approval: Approval, status: int = 200, **forms: object) -> Response:
    forms.setdefault("approve_form", ApproveForm(formdata=None))
    return page(
        "approvals/show.html",
        status,
        approval=approval,
        available=_available(approval),
        book=_place(approval),
        reject_form=RejectForm(formdata=None),
        withdraw_form=WithdrawRequestForm(formdata=None),
        **forms,
    )


@bp.route("/<int:approval_id>")
@roles(Role.OWNER)
def show(approval_id: int) -> Response:
    """The amount, its value, the wallet's balance and the address, with the decisions."""
    return _show(_approval(approval_id))


def _decided(approval: Approval, won: bool, done: str) -> Response:
    """Back to the approval, saying what this decision did, or that another came first."""
    if won:
        flash(done, "success")
    else:
        flash("This no longer waits for an approval. Here is where it stands.", "info")
    return redirect(url_for(".show", approval_id=approval.id))


@bp.post("/<int:approval_id>/approve")
@roles(Role.OWNER)
def approve(approval_id: int) -> Response:
    """Another owner lets it go, with a fresh second factor; never the one who asked (403)."""
    approval = _approval(approval_id)
    form = ApproveForm()
    refused = _beyond_staffs_reach(approval, form)  # before the code: none is used up
    if refused:
        return refused
    status = _approval_refused(form, approval.requested_by_id, approval.requested_by)
    if status:
        return _show(approval, status, approve_form=form)
    refused = _beyond_staffs_reach(approval, form, locked=True)  # one step with the approval
    if refused:
        return refused
    user = current_user._get_current_object()
    return _decided(approval, approvals.approve(approval, user), "Approved: sent in a moment.")


def _beyond_staffs_reach(
    approval: Approval, form: ApproveForm, *, locked: bool = False
) -> Response | None:
    """The page refusing a staff refund beyond the owners' limits now, with why
    (`approvals.above_staffs_reach`), or None."""
    above = approvals.above_staffs_reach(approval, locked=locked)
    if above is None:
        return None
    form.form_errors.append(BEYOND_STAFFS_REACH.get(above, ABOVE_STAFFS_REACH))
    return _show(approval, 422, approve_form=form)


def _approval_refused(
    form: ApproveForm, requested_by_id: int | None, requester: User | None
) -> int | None:
    """The status refusing the current owner's approval of what `requester` asked for (the
    reason on the form), or None: never the requester's own (403), nor an owner new or made
    by them (403), nor without a fresh second factor."""
    user = current_user._get_current_object()
    passkey_only = user.merchant.require_passkey_for_approvals
    if requested_by_id == user.id:
        form.form_errors.append(OWN_REQUEST)
        return 403
    if owner_limits.held_owner(user, requester):
        form.form_errors.append(NEW_OWNER)
        return 403
    if not (user.passkeys if passkey_only else user.has_second_factor):
        form.form_errors.append(PASSKEY_ONLY if passkey_only else NO_SECOND_FACTOR)
        return 403
    return form_refused(form, user, purpose="approval", passkey_only=passkey_only)


@bp.post("/<int:approval_id>/reject")
@roles(Role.OWNER)
def reject(approval_id: int) -> Response:
    """Another owner refuses it: nothing is sent."""
    approval = _approval(approval_id)
    if not RejectForm().validate_on_submit():
        abort(400)
    if approval.requested_by_id == current_user.id:
        abort(403)
    won = approvals.reject(approval, current_user._get_current_object())
    return _decided(approval, won, "Rejected: nothing will be sent.")


@bp.post("/<int:approval_id>/withdraw")
@roles(Role.OWNER)
def withdraw(approval_id: int) -> Response:
    """The owner who asked takes the request back: nothing is sent."""
    approval = _approval(approval_id)
    if not WithdrawRequestForm().validate_on_submit():
        abort(400)
    if approval.requested_by_id != current_user.id:
        abort(403)
    won = approvals.withdraw(approval, current_user._get_current_object())
    return _decided(approval, won, "Your request was withdrawn: nothing will be sent.")


def _change(change_id: int) -> ControlChange:
    found = controls.find(current_user.merchant, change_id)
    if found is None:
        abort(404)
    return found


def _change_decided(won: bool, done: str) -> Response:
    if won:
        flash(done, "success")
    else:
        flash("This change no longer waits: it was decided, canceled or has expired.", "info")
    return redirect(url_for(".index"))


@bp.post("/changes/<int:change_id>/approve")
@roles(Role.OWNER)
def approve_change(change_id: int) -> Response:
    """Another owner applies a relaxed control now, with a fresh second factor; never the one
    who asked (403)."""
    change = _change(change_id)
    form = ApproveForm()
    status = _approval_refused(form, change.requested_by_id, change.requested_by)
    if status:
        return _index(status, approve_form=form)
    user = current_user._get_current_object()
    return _change_decided(controls.approve(change, user), f"Approved: {change.after}.")


@bp.post("/changes/<int:change_id>/cancel")
@roles(Role.OWNER)
def cancel_change(change_id: int) -> Response:
    """Any owner keeps the control as it is (canceling relaxes nothing)."""
    change = _change(change_id)
    if not CancelChangeForm().validate_on_submit():
        abort(400)
    won = controls.cancel(change, current_user._get_current_object())
    return _change_decided(won, f"Canceled: {change.before} stays.")

"""`/attention`: the items of the mirror that wait for a decision, grouped by reason: the newest
of each, and each reason's own list by pages (`?group=late`).

Link and reject are the operations pages' own actions, posted to their URLs with the
transactions of one operation ticked and `from=attention`: they ask for confirmation, and
answer, on this list (`confirming`, `acted`), so the person stays on it. Mark as settled is
this page's own: it closes an over- or underpaid operation that no API action can close, with
a note. Accountants see no buttons (and the actions refuse them). After any action the handled
item is gone and the focus goes to the next one (`next_item`), on the list the form was on (its
`group` field).
"""

from __future__ import annotations

import re

from flask import abort, current_app, flash, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.api import Operation
from portal.identity.models import Role
from portal.payments.pages.attention import bp
from portal.payments.pages.attention.forms import SettleForm
from portal.payments.rules import attention, decisions
from portal.web.access import ALL_ROLES, may_open, roles
from portal.web.api_errors import read_only
from portal.web.lists import local_page, record_url
from portal.web.rendering import render_page, wants_fragment

MOVERS = (Role.OWNER, Role.OPERATOR)
PAGE, FRAGMENT = "attention/index.html", "attention/_queue.html"
# What `focus` may name: an element id of the list (`item-...`), nothing else.
ITEM_ID = re.compile(r"item-[\w-]{1,80}")


def _queue(status: int = 200, **context: object) -> Response:
    """The list, whole or (htmx) its queue part; `focus` names the item that takes the focus."""
    focus = request.args.get("focus") or context.pop("focus", None)
    context.setdefault("settling", None)  # the operation whose settle form was refused
    reason, merchant_id = _group(), current_user.merchant_id
    if reason is None:
        groups, page = attention.needs_attention(merchant_id), None
    else:
        page = local_page(attention.waiting(merchant_id, reason))
        groups = [attention.group(reason, page.items, page.total)]
    return render_page(
        PAGE,
        FRAGMENT,
        status,
        groups=groups,
        page=page,
        may_act=may_open("operations.link_transactions") and not read_only(),
        may_settle=may_open("attention.settle"),
        focus=focus if isinstance(focus, str) and ITEM_ID.fullmatch(focus) else None,
        sync_seconds=current_app.config["SYNC_SECONDS"],
        urls=_item_urls(),
        **context,
    )


def _group() -> attention.Reason | None:
    """The reason whose own list is asked for (`?group=`, or the field of a form posted from
    that list); None: the newest of every reason. A name of no reason is not found."""
    named = request.values.get("group")
    if named is None:
        return None
    try:
        return attention.Reason(named)
    except ValueError:
        abort(404)


def _item_urls() -> dict[str, object]:
    """The addresses of the list's items, each built once for the page's items."""
    operation = "operation_id"
    return {
        "transaction": record_url("transactions.detail", "transaction_id"),
        "operation": record_url("operations.detail", operation),
        "link": record_url("operations.link_transactions", operation),
        "reject": record_url("operations.reject_transactions", operation),
        "refund": record_url("refunds.new", operation),
        "settle": record_url("attention.settle", operation),
    }


@bp.get("/attention")
@roles(*ALL_ROLES)
def index() -> Response:
    return _queue()


@bp.post("/attention/<operation_id>/settle")
@roles(*MOVERS)
def settle(operation_id: str) -> Response:
    """Mark as settled; the focus then goes to the next item (Post/Redirect/Get, or in place)."""
    if not attention.is_mirrored(current_user.merchant_id, operation_id):
        abort(404)
    form = SettleForm()
    if not form.validate_on_submit():
        return _queue(422, settle_form=form, settling=operation_id)
    refusal = decisions.settle(
        current_user.merchant_id, current_user.id, operation_id, form.note.data
    )
    if refusal is not None:
        return _queue(409, error=refusal)
    return _left(f"Operation {operation_id} marked as settled.", form.next_item.data)


def confirming(operation: Operation, status: int = 200, **context: object) -> Response:
    """The list with a link or rejection of `operation`'s transactions waiting for confirmation
    at its top (or the refusal of one), for the operations' actions posted from here."""
    return _queue(status, operation=operation, next_item=_next_item(), **context)


def acted(_operation_id: str, message: str) -> Response:
    """After a link or rejection posted from here: back on the list, on its next item."""
    return _left(message, _next_item())


def _left(message: str, next_item: str | None) -> Response:
    """The list once an item has left it: the notice, and the focus on `next_item`, in place
    (htmx) or by a redirect (Post/Redirect/Get)."""
    if wants_fragment():
        return _queue(notice=message, focus=next_item)
    flash(message, "success")
    return redirect(url_for("attention.index", group=_group(), focus=next_item or None))


def _next_item() -> str | None:
    """The item the form names to take the focus next, if it is one of the list's ids."""
    named = request.form.get("next_item", "")
    return named if ITEM_ID.fullmatch(named) else None

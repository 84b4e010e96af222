"""What people decided about the attention list's items, before the mirror sees it.

The mirror alone writes its rows and events, at its next sync. Until then, an item someone
linked, rejected or canceled through the portal would still be listed: a `handled` decision
hides it until the mirror has synced after it. A `settled` decision closes an over- or
underpaid operation that has no API action, for the amount received when it was settled.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import sqlalchemy as sa

from portal.extensions import db
from portal.identity.rules import audit
from portal.live.rules.events import current_generation
from portal.payments.models import Decision, DecisionKind, MirroredOperation
from portal.payments.rules.attention import recount, settleable
from portal.payments.rules.operation_money import ENDED_STATUSES


def record_handled(
    merchant_id: int,
    user_id: int | None,
    operation_id: str,
    transaction_ids: Sequence[str | None] = (),
    *,
    status_before: str | None = None,
) -> None:
    """Remember that a person acted on the operation (and these transactions of it) through
    the portal. `status_before` is the operation's status when they acted: linking money to an
    ended operation makes it late, which the mirror may never have seen (it may not have synced
    while the operation was ended). The caller commits."""
    generation = current_generation(merchant_id)
    db.session.add_all(
        Decision(
            merchant_id=merchant_id,
            connection_generation=generation,
            kind=DecisionKind.HANDLED,
            operation_id=operation_id,
            transaction_id=transaction_id,
            user_id=user_id,
        )
        for transaction_id in ([*transaction_ids] if transaction_ids else [None])
    )
    if status_before in ENDED_STATUSES:
        db.session.execute(
            sa.update(MirroredOperation)
            .where(
                MirroredOperation.merchant_id == merchant_id,
                MirroredOperation.operation_id == operation_id,
                MirroredOperation.ended_status.is_(None),
            )
            .values(ended_status=status_before)
        )
    recount(merchant_id)


def record_settled(
    merchant_id: int, user_id: int | None, operation_id: str, received: Decimal, note: str
) -> None:
    """Close an over- or underpaid operation by hand for the amount received now. The caller
    audits and commits."""
    db.session.add(
        Decision(
            merchant_id=merchant_id,
            connection_generation=current_generation(merchant_id),
            kind=DecisionKind.SETTLED,
            operation_id=operation_id,
            received=received,
            note=note,
            user_id=user_id,
        )
    )
    recount(merchant_id)  # the menu's count changes without a sync


NOT_SETTLEABLE = "This operation no longer waits to be settled: the list shows where it stands."


def settle(merchant_id: int, user_id: int | None, operation_id: str, note: str) -> str | None:
    """Mark the operation settled for what it received now, audited with the note and the
    figures. The refusal (nothing settled, the attempt audited) when the operation is not on
    the attention list to be settled; None when done."""
    operation = settleable(merchant_id, operation_id)
    parameters: dict[str, object] = {"operation_id": operation_id, "note": note}
    if operation is None:
        audit.record("operation.settle", parameters=parameters, error=NOT_SETTLEABLE)
        return NOT_SETTLEABLE
    received = operation.amount_paid or Decimal(0)
    record_settled(merchant_id, user_id, operation_id, received, note)
    parameters |= {
        "state": operation.state,
        "received": received,
        "difference": operation.difference,
    }
    audit.record("operation.settle", parameters=parameters)  # commits the decision with it
    return None

"""What a person decides about an operation through the portal: link, reject, cancel.

Each action is audited and remembered as handled (`decisions.record_handled`), so that the
attention list stops showing it before the mirror's next sync. Linking confirms the operation
for the sum of the linked transactions, whatever was due (the API's rule): below the due, the
person must have accepted that very shortfall, the figure their confirmation showed. The figure
is recomputed here, so a stale or forged one is refused before anything is sent.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from decimal import Decimal

from portal.api import MerchantApiClient, Operation, Transaction
from portal.extensions import db
from portal.identity.models import Merchant
from portal.identity.rules import audit
from portal.payments.rules.decisions import record_handled
from portal.payments.rules.operation_money import (
    ENDED_STATUSES,
    ZERO,
    OperationMoney,
    State,
    money_of,
    operation_money,
)

UNDERPAYMENT_NOT_ACCEPTED = "An underpayment was not accepted for the figure it comes to."


@dataclass(frozen=True)
class LinkPreview:
    """The operation's money as the API will count it once `chosen` are linked."""

    chosen: tuple[Transaction, ...]
    money: OperationMoney
    # Confirmed transactions outside the link: once any is linked, only linked ones count.
    left_out: tuple[Transaction, ...]

    @property
    def underpayment(self) -> Decimal:
        """What the person must accept to confirm: the shortfall after linking (none within
        the merchant's payment tolerance)."""
        return self.money.shortfall


class UnderpaymentNotAccepted(Exception):
    """A link below the due without the acceptance of its shortfall (or with another figure)."""

    def __init__(self, preview: LinkPreview) -> None:
        super().__init__(UNDERPAYMENT_NOT_ACCEPTED)
        self.preview = preview


def link_preview(merchant: Merchant, operation: Operation, ids: Collection[str]) -> LinkPreview:
    """The money after linking the transactions `ids`: they become linked and confirmed, the
    operation confirmed, and `amount_paid` the sum of every linked transaction."""
    after_link = tuple(
        replace(t, status="confirmed", linked=True, reject_reason=None) if t.id in ids else t
        for t in operation.transactions
    )
    received = sum((t.amount for t in after_link if t.linked), ZERO)
    linked = replace(operation, status="confirmed", amount_paid=received, transactions=after_link)
    ended = (
        operation.status in ENDED_STATUSES or money_of(merchant, operation).state is State.PAID_LATE
    )
    return LinkPreview(
        chosen=tuple(t for t in operation.transactions if t.id in ids),
        money=operation_money(linked, merchant.payment_tolerance_percent, ended_before=ended),
        left_out=tuple(t for t in after_link if t.status == "confirmed" and not t.linked),
    )


def link(
    api: MerchantApiClient,
    merchant: Merchant,
    user_id: int | None,
    operation: Operation,
    ids: list[str],
    accepted_underpayment: Decimal | None,
) -> None:
    """Link `ids` to `operation` (as read just before). Below the due, `accepted_underpayment`
    must be the shortfall this link leaves, else `UnderpaymentNotAccepted` and nothing is sent.
    The acceptance is audited with its figure."""
    preview = link_preview(merchant, operation, ids)
    parameters: dict[str, object] = {"operation_id": operation.id, "transaction_ids": ids}
    if preview.underpayment:
        figure = f"{preview.underpayment} {preview.money.currency}"
        if accepted_underpayment != preview.underpayment:
            given = {"underpayment": figure, "accepted": accepted_underpayment}
            refusal = UNDERPAYMENT_NOT_ACCEPTED
            audit.record("transactions.link", parameters=parameters | given, error=refusal)
            raise UnderpaymentNotAccepted(preview)
        parameters["underpayment_accepted"] = figure
    with audit.recorded("transactions.link", parameters):
        api.link_transactions(operation.id, ids)
    _handled(merchant.id, user_id, operation, ids)


def reject(
    api: MerchantApiClient,
    merchant_id: int,
    user_id: int | None,
    operation: Operation,
    ids: list[str],
    reason: str,
) -> None:
    """Reject `ids` of `operation` (as read just before) with `reason`."""
    parameters = {"operation_id": operation.id, "transaction_ids": ids, "reason": reason}
    with audit.recorded("transactions.reject", parameters):
        api.reject_transactions(operation.id, ids, reason)
    _handled(merchant_id, user_id, operation, ids)


def cancel(
    api: MerchantApiClient, merchant_id: int, user_id: int | None, operation: Operation
) -> None:
    """Cancel `operation` (as read just before)."""
    with audit.recorded("operation.cancel", {"operation_id": operation.id}):
        api.cancel_operation(operation.id)
    _handled(merchant_id, user_id, operation)


def _handled(
    merchant_id: int, user_id: int | None, operation: Operation, ids: list[str] | None = None
) -> None:
    record_handled(merchant_id, user_id, operation.id, ids or (), status_before=operation.status)
    db.session.commit()

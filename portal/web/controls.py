"""What a page says of a relaxed control that waits (`portal.money.rules.controls`): the limits,
users and address book pages say it the same way."""

from __future__ import annotations

from portal.money.models import ControlChange, ControlKind


def waits_words(change: ControlChange, what: str) -> str:
    """`what` happens once another owner approves, or, for a single owner, at `due_at`."""
    if change.due_at is None:
        return (
            f"{what} once an owner other than you approves it under Approvals: relaxing a "
            "control is never one owner's decision."
        )
    if change.kind is ControlKind.NOT_OWNER:
        return (
            f"{what} on {change.due_at:%Y-%m-%d %H:%M} UTC: no owner but the one concerned could "
            "approve it, so it waits 48 hours, and every owner was mailed. They, or you, can "
            "cancel it under Approvals."
        )
    return (
        f"{what} on {change.due_at:%Y-%m-%d %H:%M} UTC: you are the only owner, so relaxing a "
        "control waits 48 hours, and every owner was mailed. Cancel it under Approvals."
    )

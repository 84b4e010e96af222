"""When an operation is expected to expire. The API gives no expiry: the portal assumes the
lifetime it is configured with (`PORTAL_OPERATION_TTL_MINUTES`), counted from creation, and the
page says the time is assumed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from portal.api import Operation
from portal.payments.rules.operation_money import WITHDRAWAL_CATEGORIES, can_change


@dataclass(frozen=True)
class AssumedExpiry:
    at: datetime
    minutes_left: int  # whole minutes, rounded down; 0 once the time has passed


def assumed_expiry(operation: Operation, ttl_minutes: int, now: datetime) -> AssumedExpiry | None:
    """The expected expiry of a payment operation still open; None for any other."""
    if operation.category in WITHDRAWAL_CATEGORIES or not can_change(operation.status):
        return None
    at = operation.created_at + timedelta(minutes=ttl_minutes)
    left = max((at - now).total_seconds(), 0)
    return AssumedExpiry(at, int(left // 60))

"""How many operations were created from one moment to another, by category and money state,
from the operations' totals (`OperationTotal`, which the database keeps by UTC month and day):
the months and days a stretch covers whole are read from the totals, and only the parts of days
at its two ends from the operations themselves (`portal.periods.covered`). Two queries, whatever
the merchant's size.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

import sqlalchemy as sa

from portal import periods
from portal.database import in_spans
from portal.extensions import db
from portal.payments.models import MirroredOperation, OperationTotal

# (category, state): a state of None is an operation whose money the portal has not read.
Key = tuple[str, str | None]


def counts(merchant_id: int, start: datetime, end: datetime) -> Counter[Key]:
    """The merchant's operations created from `start` (included) to `end` (excluded), counted
    by category and state; a pair without any has no entry."""
    whole, stretches = periods.covered(start, end)
    found: Counter[Key] = Counter()
    if whole:
        total = OperationTotal
        rows = db.session.execute(
            sa.select(total.category, total.state, sa.func.sum(total.count))
            .where(total.merchant_id == merchant_id, in_spans(total.span, total.starts, whole))
            .group_by(total.category, total.state)
        )
        for category, state, count in rows:
            found[(category, state or None)] += count
    if stretches:
        operation = MirroredOperation
        rows = db.session.execute(
            sa.select(operation.category, operation.state, sa.func.count())
            .where(
                operation.merchant_id == merchant_id,
                sa.or_(*(_created_within(begins, ends) for begins, ends in stretches)),
            )
            .group_by(operation.category, operation.state)
        )
        for category, state, count in rows:
            found[(category, state)] += count
    return +found  # without the pairs whose operations all moved on


def created_between(merchant_id: int, start: datetime, end: datetime) -> sa.ColumnElement[int]:
    """How many of the merchant's operations were created from `start` (included) to `end`
    (excluded), as an expression to select: the dashboard's bars, many in one query. The same
    reading as `counts`: the totals of the whole months and days, the operations of the parts of
    days at the ends."""
    whole, stretches = periods.covered(start, end)
    total, operation = OperationTotal, MirroredOperation
    kept: sa.ColumnElement[int] = sa.literal(0)
    if whole:
        kept = (
            sa.select(sa.func.coalesce(sa.func.sum(total.count), 0))
            .where(total.merchant_id == merchant_id, in_spans(total.span, total.starts, whole))
            .scalar_subquery()
        )
    if not stretches:
        return kept
    counted = (
        sa.select(sa.func.count())
        .where(
            operation.merchant_id == merchant_id,
            sa.or_(*(_created_within(begins, ends) for begins, ends in stretches)),
        )
        .scalar_subquery()
    )
    return kept + counted


def _created_within(start: datetime | None, end: datetime | None) -> sa.ColumnElement[bool]:
    created = MirroredOperation.created_at
    return sa.and_(
        sa.true() if start is None else created >= start,
        sa.true() if end is None else created < end,
    )

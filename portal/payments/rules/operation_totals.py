"""How many operations were created from one moment to another, by category and money state,
from the operations' totals (`OperationTotal`, which the database keeps by UTC month and day):
the months and days a stretch covers whole are read from the totals, and only the parts of days
at its two ends from the operations themselves (`portal.periods.covered`). Two queries, whatever
the merchant's size.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import date, datetime

import sqlalchemy as sa

from portal import periods
from portal.database import in_spans
from portal.extensions import db
from portal.payments.models import MirroredOperation, OperationTotal
from portal.periods import Span, Stretch, Whole

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


def created_in_each(merchant_id: int, stretches: Sequence[Stretch]) -> list[int]:
    """How many of the merchant's operations were created in each of `stretches` (from its
    start, included, to its end): the dashboard's bars, read as `counts` reads a period. The
    totals of the whole months and days they cover come in one query, and the operations of the
    parts of days at their ends (which a day in a zone other than UTC has) are counted in one
    more, built once for as many parts: a statement of two subqueries a bar, built for each
    page, cost a page of 30 bars 3 ms before it ran."""
    covers = [periods.covered(begins, ends) for begins, ends in stretches]
    kept = _totals(merchant_id, [whole for wholes, _ in covers for whole in wholes])
    parts = [part for _, of_bar in covers for part in of_bar]
    counted = iter(_counts_of(merchant_id, parts) if parts else [])
    return [
        sum(kept.get(key, 0) for whole in wholes for key in _spans(whole))
        + sum(next(counted) for _ in of_bar)
        for wholes, of_bar in covers
    ]


def _totals(merchant_id: int, wholes: list[Whole]) -> dict[tuple[Span, date], int]:
    """The merchant's totals of every month and of every day from the first to the last that
    `wholes` cover, by span and first day (one query, none for no span)."""
    reach: list[Whole] = []
    for kind in Span:
        firsts = [first for span, first, _ in wholes if span is kind and first is not None]
        untils = [until for span, _, until in wholes if span is kind and until is not None]
        if firsts and untils:
            reach.append((kind, min(firsts), max(untils)))
    if not reach:
        return {}
    total = OperationTotal
    rows = db.session.execute(
        sa.select(total.span, total.starts, sa.func.sum(total.count))
        .where(total.merchant_id == merchant_id, in_spans(total.span, total.starts, reach))
        .group_by(total.span, total.starts)
    )
    return {(Span(span), starts): count for span, starts, count in rows}


def _spans(whole: Whole) -> Iterator[tuple[Span, date]]:
    """Each month or day of `whole`, bounded on both sides."""
    span, first, until = whole
    assert first is not None and until is not None  # a bar's ends are instants
    while first < until:
        yield span, first
        first = span.after(first)


def _counts_of(merchant_id: int, stretches: list[Stretch]) -> list[int]:
    """How many of the merchant's operations were created in each of `stretches` (one query,
    its bounds bound at execution, so the same statement for as many stretches)."""
    bounds: dict[str, object] = {"merchant_id": merchant_id}
    for number, (begins, ends) in enumerate(stretches):
        bounds[f"start_{number}"], bounds[f"end_{number}"] = begins, ends
    row = db.session.execute(_counts_statement(len(stretches)), bounds).one()
    return [int(count) for count in row]


@functools.cache
def _counts_statement(stretches: int) -> sa.Select:
    """The count of each of `stretches` bounded stretches, their bounds bound at execution:
    built and compiled once for every page with that many."""
    operation = MirroredOperation
    return sa.select(
        *[
            sa.select(sa.func.count())
            .where(
                operation.merchant_id == sa.bindparam("merchant_id"),
                operation.created_at >= sa.bindparam(f"start_{number}"),
                operation.created_at < sa.bindparam(f"end_{number}"),
            )
            .scalar_subquery()
            for number in range(stretches)
        ]
    )


def _created_within(start: datetime | None, end: datetime | None) -> sa.ColumnElement[bool]:
    created = MirroredOperation.created_at
    return sa.and_(
        sa.true() if start is None else created >= start,
        sa.true() if end is None else created < end,
    )

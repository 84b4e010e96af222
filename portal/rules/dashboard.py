"""The dashboard's figures for the last 30 days, computed from the operations list.

Days are calendar days in UTC, as the API's `created_from`/`created_to` filters count them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from portal.api import OPERATION_STATUSES, MerchantApiClient
from portal.rules.progress import Progress, progress

DAYS = 30
CHART_WIDTH, CHART_HEIGHT, CHART_TOP = 600, 160, 10
STATUS_ORDER = {text: code for code, text in OPERATION_STATUSES.items()}
PROGRESS_ORDER = list(Progress)
GroupKey = tuple[str, str, Progress | None]


@dataclass(frozen=True)
class Group:
    """Operations of one status in one currency; `new` ones that received money apart, by how
    far they are paid."""

    status: str
    currency: str
    count: int
    amount: Decimal
    progress: Progress | None = None


@dataclass(frozen=True)
class Bar:
    """One day of the chart, with its geometry in the SVG's coordinates."""

    day: date
    count: int
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Summary:
    since: date
    until: date
    total: int
    groups: list[Group]
    bars: list[Bar]
    peak: int


def summarise(api: MerchantApiClient, today: date | None = None) -> Summary:
    """Counts and sums by status and currency, and operations per day, over the last 30 days."""
    until = today or datetime.now(UTC).date()
    since = until - timedelta(days=DAYS - 1)
    counts: Counter[GroupKey] = Counter()
    sums: defaultdict[GroupKey, Decimal] = defaultdict(Decimal)
    per_day: Counter[date] = Counter()
    for operation in api.iter_operations(created_from=since, created_to=until):
        key = (operation.status, operation.currency, progress(operation))
        counts[key] += 1
        sums[key] += operation.amount
        per_day[operation.created_at.astimezone(UTC).date()] += 1
    groups = [
        Group(key[0], key[1], counts[key], sums[key], key[2])
        for key in sorted(counts, key=_group_order)
    ]
    days = [since + timedelta(days=offset) for offset in range(DAYS)]
    peak = max((per_day[day] for day in days), default=0)
    return Summary(since, until, sum(counts.values()), groups, _bars(days, per_day, peak), peak)


def _group_order(key: GroupKey) -> tuple[int, str, str, int]:
    """By status as the API numbers them, then currency; `new` ones unpaid before paid ones."""
    status, currency, paid = key
    rank = -1 if paid is None else PROGRESS_ORDER.index(paid)
    return (STATUS_ORDER.get(status, len(STATUS_ORDER)), status, currency, rank)


def _bars(days: list[date], per_day: Counter[date], peak: int) -> list[Bar]:
    slot = CHART_WIDTH / len(days)
    bars = []
    for index, day in enumerate(days):
        height = (CHART_HEIGHT - CHART_TOP) * per_day[day] / peak if peak else 0
        bars.append(
            Bar(
                day,
                per_day[day],
                x=round(index * slot + 1, 2),
                y=round(CHART_HEIGHT - height, 2),
                width=round(slot - 2, 2),
                height=round(height, 2),
            )
        )
    return bars

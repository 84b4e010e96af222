"""Periods of calendar days in a reader's time zone, and the presets one click away: the
dashboard and the statement count between the same UTC instants for the same words.

A period's bounds become UTC instants once (`Period.instants`), so every figure is counted
between two instants in the database, whatever zone the reader lives in.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


@lru_cache(maxsize=64)
def zone_named(name: str) -> tzinfo:
    """The time zone a user chose, by its name; UTC for a name this machine does not know."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


class Preset(enum.StrEnum):
    """The periods one click away; each is relative to the day it is asked for."""

    TODAY = "today"
    YESTERDAY = "yesterday"
    SEVEN_DAYS = "7-days"
    THIRTY_DAYS = "30-days"
    THIS_MONTH = "this-month"
    LAST_MONTH = "last-month"


def preset_days(preset: Preset, today: date) -> tuple[date, date]:
    """The first and last day (both included) of `preset`, as seen on `today`."""
    if preset is Preset.TODAY:
        return today, today
    if preset is Preset.YESTERDAY:
        yesterday = today - timedelta(days=1)
        return yesterday, yesterday
    if preset is Preset.SEVEN_DAYS:
        return today - timedelta(days=6), today
    if preset is Preset.THIRTY_DAYS:
        return today - timedelta(days=29), today
    if preset is Preset.THIS_MONTH:
        return today.replace(day=1), today
    last_day = today.replace(day=1) - timedelta(days=1)
    return last_day.replace(day=1), last_day


@dataclass(frozen=True)
class Period:
    """Calendar days `since` to `until`, both included, in `zone`."""

    since: date
    until: date
    zone: tzinfo

    def start(self, day: date) -> datetime:
        """The UTC instant at which `day` begins in the period's zone."""
        return datetime.combine(day, time(), tzinfo=self.zone).astimezone(UTC)

    @property
    def days(self) -> int:
        return (self.until - self.since).days + 1

    @property
    def previous(self) -> Period:
        """The same number of days just before."""
        return Period(
            self.since - timedelta(days=self.days), self.since - timedelta(days=1), self.zone
        )

    @property
    def instants(self) -> tuple[datetime, datetime]:
        """The UTC instants of its first moment and of the moment after its last."""
        return self.start(self.since), self.start(self.until + timedelta(days=1))


class Span(enum.StrEnum):
    """What a total covers: a calendar month or a day, in UTC (`covered`)."""

    MONTH = "month"
    DAY = "day"

    def starts(self, moment: datetime) -> date:
        """The first day of the span that `moment` is in."""
        moment = moment.astimezone(UTC)
        return date(moment.year, moment.month, 1) if self is Span.MONTH else moment.date()

    def after(self, first: date) -> date:
        """The first day of the span after the one beginning on `first`."""
        if self is Span.DAY:
            return first + timedelta(days=1)
        return date(first.year + first.month // 12, first.month % 12 + 1, 1)

    def first_whole(self, moment: datetime) -> date:
        """The first day of the first span that begins at or after `moment`."""
        first = self.starts(moment)
        return first if midnight(first) == moment else self.after(first)


# Spans of one kind from a first day (included; None: the first there is) to a last (excluded;
# None: the last there is).
Whole = tuple[Span, date | None, date | None]
# A stretch of time from a moment (included; None: the first) to another (excluded; None: the
# last).
Stretch = tuple[datetime | None, datetime | None]


def midnight(first: date) -> datetime:
    """The moment `first` begins in UTC."""
    return datetime(first.year, first.month, first.day, tzinfo=UTC)


def covered(start: datetime | None, end: datetime | None) -> tuple[list[Whole], list[Stretch]]:
    """`start` to `end` as the UTC months it covers whole, the whole days of the rest, and the
    parts of days left at its ends: totals kept by month and day (the ledger's, the
    operations') add up the first two, and only the last are read row by row."""
    whole: list[Whole] = []
    stretches: list[Stretch] = [(start, end)]
    for span in Span:
        rest: list[Stretch] = []
        for begins, ends in stretches:
            first = None if begins is None else span.first_whole(begins)
            until = None if ends is None else span.starts(ends)
            if first is not None and until is not None and first >= until:
                rest.append((begins, ends))
                continue
            whole.append((span, first, until))
            if begins is not None and first is not None and begins < midnight(first):
                rest.append((begins, midnight(first)))
            if ends is not None and until is not None and midnight(until) < ends:
                rest.append((midnight(until), ends))
        stretches = rest
    return whole, stretches

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

"""The dashboard's period: a preset, or From and To dates, from the query string."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from werkzeug.datastructures import MultiDict
from wtforms import DateField, Form, StringField

from portal.payments.rules.dashboard import DEFAULT_PRESET, Preset, preset_days

PERIOD_WORDS = {
    Preset.TODAY: "Today",
    Preset.SEVEN_DAYS: "Last 7 days",
    Preset.THIRTY_DAYS: "Last 30 days",
    Preset.THIS_MONTH: "This month",
    Preset.LAST_MONTH: "Last month",
}
REFUSED = (
    "That period cannot be shown: enter both dates as YYYY-MM-DD, the first not after the "
    "second, at most 10 years apart. Showing the last 30 days instead."
)
# Dates a period may start and end on; a longer span would only draw bars nobody can read.
EARLIEST, LATEST, MOST_DAYS = date(1970, 1, 1), date(9998, 12, 31), 3660


class PeriodForm(Form):
    """`?period=7-days`, or `?from=2026-11-01&to=2026-11-15` (days in the user's zone)."""

    period = StringField("Period")
    since = DateField("From", name="from", render_kw={"placeholder": "YYYY-MM-DD"})
    until = DateField("To", name="to", render_kw={"placeholder": "YYYY-MM-DD"})

    def __init__(self, args: MultiDict | Mapping[str, str]) -> None:
        super().__init__(MultiDict(args))

    def days(self, today: date) -> tuple[date, date, Preset | None, str | None]:
        """First and last day, the preset they come from (None for dates typed), and why the
        query was not followed (None when it was)."""
        if any((self.since.raw_data or []) + (self.until.raw_data or [])):
            first, last = self.since.data, self.until.data
            if first is None or last is None or not _in_order(first, last):
                return (*preset_days(DEFAULT_PRESET, today), DEFAULT_PRESET, REFUSED)
            return first, last, None, None
        chosen = self.period.data or DEFAULT_PRESET.value
        if chosen not in set(Preset):
            return (*preset_days(DEFAULT_PRESET, today), DEFAULT_PRESET, REFUSED)
        return (*preset_days(Preset(chosen), today), Preset(chosen), None)


def _in_order(first: date, last: date) -> bool:
    return EARLIEST <= first <= last <= LATEST and (last - first).days < MOST_DAYS

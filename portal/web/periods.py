"""A page's period: a preset, or From and To dates, from the query string, in the reader's
zone. The dashboard and the statement offer their own presets through the same form."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from werkzeug.datastructures import MultiDict
from wtforms import DateField, Form, StringField

from portal.periods import Preset, preset_days

PRESET_WORDS = {
    Preset.TODAY: "Today",
    Preset.YESTERDAY: "Yesterday",
    Preset.SEVEN_DAYS: "Last 7 days",
    Preset.THIRTY_DAYS: "Last 30 days",
    Preset.THIS_MONTH: "This month",
    Preset.LAST_MONTH: "Last month",
}
REFUSED = (
    "That period cannot be shown: enter both dates as YYYY-MM-DD, the first not after the "
    "second, at most 10 years apart. Showing {default} instead."
)
# Dates a period may start and end on; a longer span would only draw bars nobody can read.
EARLIEST, LATEST, MOST_DAYS = date(1970, 1, 1), date(9998, 12, 31), 3660


class PeriodForm(Form):
    """`?period=7-days`, or `?from=2026-11-01&to=2026-11-15` (days in the user's zone), among
    the `presets` a page offers; `default` when none is asked for or the query is refused."""

    period = StringField("Period")
    since = DateField("From", name="from", render_kw={"placeholder": "YYYY-MM-DD"})
    until = DateField("To", name="to", render_kw={"placeholder": "YYYY-MM-DD"})

    def __init__(
        self, args: MultiDict | Mapping[str, str], presets: tuple[Preset, ...], default: Preset
    ) -> None:
        super().__init__(MultiDict(args))
        self.presets = {preset: PRESET_WORDS[preset] for preset in presets}
        self.default = default

    def days(self, today: date) -> tuple[date, date, Preset | None, str | None]:
        """First and last day, the preset they come from (None for dates typed), and why the
        query was not followed (None when it was)."""
        if any((self.since.raw_data or []) + (self.until.raw_data or [])):
            first, last = self.since.data, self.until.data
            if first is None or last is None or not _in_order(first, last):
                return self._refused(today)
            return first, last, None, None
        chosen = self.period.data or self.default.value
        if chosen not in {preset.value for preset in self.presets}:
            return self._refused(today)
        return (*preset_days(Preset(chosen), today), Preset(chosen), None)

    def title(self, first: date, last: date, preset: Preset | None) -> str:
        """The period in words: its preset's, else its dates."""
        return PRESET_WORDS[preset] if preset else f"{first} to {last}"

    def _refused(self, today: date) -> tuple[date, date, Preset, str]:
        words = PRESET_WORDS[self.default].lower()
        return (*preset_days(self.default, today), self.default, REFUSED.format(default=words))


def _in_order(first: date, last: date) -> bool:
    return EARLIEST <= first <= last <= LATEST and (last - first).days < MOST_DAYS

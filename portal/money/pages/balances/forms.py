"""The form of an entered balance."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

from flask_wtf import FlaskForm
from wtforms import DateField, Form, StringField, SubmitField
from wtforms.validators import InputRequired

from portal.periods import Preset, preset_days
from portal.web.fields import AmountField, CodeField

# `2024-05-01 14:00`, seconds optional, a `T` for the space and a trailing `Z` or `UTC` allowed.
_MOMENT = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)\s*(?:Z|UTC)?", re.I)
PERIOD_SHAPE = "Enter both dates as YYYY-MM-DD, from 1970 to 9998, the first not after the second."
# The days a period may span: the ledger holds nothing older, and a day's bounds in any zone stay
# within the dates Python can write.
FIRST_DAY, LAST_DAY = date(1970, 1, 1), date(9998, 12, 31)
MOMENT_SHAPE = "Enter a date and time in UTC, such as 2024-05-01 14:00, or leave it empty for now."


class UtcMomentField(StringField):
    """A moment typed in UTC; empty is None (now, when the form is sent)."""

    data: datetime | None

    def process_formdata(self, valuelist: list[str]) -> None:
        text = valuelist[0].strip() if valuelist else ""
        self.data = None
        if not text:
            return
        match = _MOMENT.fullmatch(text)
        try:
            if match is None:
                raise ValueError(MOMENT_SHAPE)
            time = match.group(2) if match.group(2).count(":") == 2 else f"{match.group(2)}:00"
            self.data = datetime.fromisoformat(f"{match.group(1)}T{time}").replace(tzinfo=UTC)
        except ValueError:
            raise ValueError(MOMENT_SHAPE) from None

    def _value(self) -> str:
        if self.raw_data:
            return self.raw_data[0]
        return self.data.strftime("%Y-%m-%d %H:%M:%S") if self.data else ""


class BalanceForm(FlaskForm):
    """A currency's balance as of a moment: its opening, or a later balance whose difference
    from the derived one is booked as an adjustment. `code` is asked (and checked by the view)
    only of users with two-factor sign-in on."""

    amount = AmountField(
        "Balance", zero=True, validators=[InputRequired("Enter the wallet's balance.")]
    )
    as_of = UtcMomentField("As of (UTC)")
    code = CodeField("Your authenticator code")
    submit = SubmitField("Enter balance")


class LedgerPeriodForm(Form):
    """The ledger's period from the query string: `from` and `to`, days in the reader's zone,
    both included; this month when neither is given."""

    since = DateField("From", name="from", render_kw={"placeholder": "YYYY-MM-DD"})
    until = DateField("To", name="to", render_kw={"placeholder": "YYYY-MM-DD"})

    def days(self, today: date) -> tuple[date, date] | None:
        """The first and last day; None (with the fields' messages) for dates it cannot read."""
        if not any((self.since.raw_data or []) + (self.until.raw_data or [])):
            return preset_days(Preset.THIS_MONTH, today)
        first, last = self.since.data, self.until.data
        if first is None or last is None or not FIRST_DAY <= first <= last <= LAST_DAY:
            self.until.errors = [*self.until.errors, PERIOD_SHAPE]
            return None
        return first, last

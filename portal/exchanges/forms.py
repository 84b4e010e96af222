"""The exchange form: a deal, sent once."""

from __future__ import annotations

from wtforms import SubmitField

from portal.web.deals import DealForm
from portal.web.one_time import IntentField


class ExchangeForm(DealForm):
    intent = IntentField()
    submit = SubmitField("Exchange")

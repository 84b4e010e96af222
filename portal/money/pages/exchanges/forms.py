"""The exchange form: a deal, reviewed, then sent once."""

from __future__ import annotations

from wtforms import SubmitField

from portal.money.pages.deals import DealForm
from portal.web.idempotent_forms import IdempotencyKeyField


class ExchangeForm(DealForm):
    """The deal and its idempotency key. The form page posts it to the review, which carries the
    same deal and key on to **Confirm exchange**: the key is of the form shown, not of the review,
    so reviewing again and confirming twice still sends once."""

    intent = IdempotencyKeyField()
    submit = SubmitField("Review")

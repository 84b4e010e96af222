"""The hidden field that carries a form's one-time key."""

from __future__ import annotations

from wtforms import HiddenField
from wtforms.validators import InputRequired, Regexp

from portal.intents import new_key

STALE = "This form is out of date, so nothing was sent. Check the details and send it again."


class IntentField(HiddenField):
    """The form's one-time key: a posted form must bring one, and every form shown gets a new
    one, made by the server as it renders the form (so a refused or corrected form that is sent
    again is a new sending, while a reload of the same post is the same one)."""

    def __init__(self, **kwargs: object) -> None:
        shape = Regexp(r"^[A-Za-z0-9_-]{16,64}\Z", message=STALE)
        super().__init__(validators=[InputRequired(STALE), shape], **kwargs)

    def _value(self) -> str:
        return new_key()

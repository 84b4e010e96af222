"""The form of the attention list's own action: mark an operation settled, with a note."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import HiddenField, TextAreaField
from wtforms.validators import DataRequired, Length

from portal.web.fields import strip


class SettleForm(FlaskForm):
    note = TextAreaField(
        "Note",
        validators=[
            DataRequired("Enter a note: what was done about the difference."),
            Length(max=1000),
        ],
        filters=[strip],
    )
    # The element of the list that takes the focus once this item has left it.
    next_item = HiddenField()

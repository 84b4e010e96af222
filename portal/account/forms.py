"""The account page's form."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import SelectChoice, SelectField, SubmitField

from portal.formatting import time_zone_names


class TimeZoneForm(FlaskForm):
    time_zone = SelectField(
        "Time zone",
        choices=lambda: [SelectChoice(name, name.replace("_", " ")) for name in time_zone_names()],
        validate_choice=True,
    )
    submit = SubmitField("Save time zone")

    def validate(self, extra_validators: dict | None = None) -> bool:
        """WTForms says "Not a valid choice"; say what is expected instead."""
        valid = super().validate(extra_validators)
        if self.time_zone.errors:
            self.time_zone.errors[:] = ["Choose a time zone from the list, such as Europe/Berlin."]
        return valid

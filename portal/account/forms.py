"""The account pages' forms."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import SelectChoice, SelectField, SubmitField

from portal.auth.forms import CodeField
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


class EnableTwoFactorForm(FlaskForm):
    code = CodeField()
    submit = SubmitField("Turn on two-factor sign-in")


class RecoveryCodesForm(FlaskForm):
    code = CodeField()
    submit = SubmitField("Make new recovery codes")


class DisableTwoFactorForm(FlaskForm):
    """Shown on the same page as `RecoveryCodesForm`: made with prefix="disable" (unique ids)."""

    code = CodeField("Authenticator or recovery code")
    submit = SubmitField("Turn off two-factor sign-in")

"""The account pages' forms."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import (
    HiddenField,
    PasswordField,
    RadioField,
    SelectChoice,
    SelectField,
    SelectMultipleField,
    StringField,
    SubmitField,
)
from wtforms.validators import DataRequired, EqualTo, Length
from wtforms.widgets import CheckboxInput, ListWidget

from portal.live.models import StatementFrequency
from portal.live.rules.event_words import HEADLINES
from portal.web.fields import PASSWORD_LENGTH, CodeField, LongListSelect
from portal.web.formatting import time_zone_names


def _current_password() -> PasswordField:
    """Asked again before a change to one's own security (`portal.identity.rules.passwords`)."""
    required = DataRequired(message="Enter your current password.")
    return PasswordField("Current password", validators=[required, Length(max=1024)])


def _zone_choices() -> list[SelectChoice]:
    return [SelectChoice(name, name.replace("_", " ")) for name in time_zone_names()]


class TimeZoneForm(FlaskForm):
    time_zone = SelectField(
        "Time zone", choices=_zone_choices, validate_choice=True, widget=LongListSelect()
    )
    submit = SubmitField("Save time zone")

    def validate(self, extra_validators: dict | None = None) -> bool:
        """WTForms says "Not a valid choice"; say what is expected instead."""
        valid = super().validate(extra_validators)
        if self.time_zone.errors:
            self.time_zone.errors[:] = ["Choose a time zone from the list, such as Europe/Berlin."]
        return valid


class TimeZoneQuestionForm(TimeZoneForm):
    """Asked once after a sign-in (`_partials/_time_zone_question.html`): the browser's zone,
    which static/js/time_zone.js selects, or "Not now". `next`: the page it was asked on."""

    time_zone = SelectField(
        "Show times in", choices=_zone_choices, validate_choice=True, widget=LongListSelect()
    )
    submit = SubmitField("Use this time zone")
    dismiss = SubmitField("Not now")
    next = HiddenField()


class ChangePasswordForm(FlaskForm):
    """Shown on the same page as `TimeZoneForm`: made with prefix="password" (unique ids).

    The code is asked of users with two-factor on only (the template shows it to them).
    """

    current_password = _current_password()
    new_password = PasswordField(
        "New password", validators=[DataRequired(message="Enter a new password."), PASSWORD_LENGTH]
    )
    new_password_again = PasswordField(
        "New password again",
        validators=[EqualTo("new_password", message="Type the same new password twice.")],
    )
    code = CodeField()
    submit = SubmitField("Change password")


class EnableTwoFactorForm(FlaskForm):
    password = _current_password()
    code = CodeField()
    submit = SubmitField("Turn on two-factor sign-in")


class RecoveryCodesForm(FlaskForm):
    """Ten new codes that sign in for as long as they are unused: the password and a fresh
    code, as turning two-factor on or off, so a stolen session and a relayed code make none."""

    password = _current_password()
    code = CodeField()
    submit = SubmitField("Make new recovery codes")


class DisableTwoFactorForm(FlaskForm):
    """Shown on the same page as `RecoveryCodesForm`: made with prefix="disable" (unique ids)."""

    password = _current_password()
    code = CodeField("Authenticator or recovery code")
    submit = SubmitField("Turn off two-factor sign-in")


class MailChoicesForm(FlaskForm):
    """Which events mail the user: one checkbox per event type."""

    event_types = SelectMultipleField(
        "E-mail me about",
        choices=[SelectChoice(name, words) for name, words in HEADLINES.items()],
        widget=ListWidget(prefix_label=False),
        option_widget=CheckboxInput(),
    )
    submit = SubmitField("Save e-mail choices")


class StatementMailForm(FlaskForm):
    """How often the statement comes by mail: offered to the users who read money."""

    frequency = RadioField(
        "E-mail me the statement",
        choices=[
            SelectChoice(StatementFrequency.NONE.value, "Never"),
            SelectChoice(StatementFrequency.WEEKLY.value, "Every week (Monday to Sunday)"),
            SelectChoice(StatementFrequency.MONTHLY.value, "Every month"),
        ],
        default=StatementFrequency.NONE.value,
    )
    submit = SubmitField("Save statement choice")


class AddPasskeyForm(FlaskForm):
    """A passkey made by the browser (static/js/passkeys.js fills `credential`), with a name.

    The code (or a passkey's answer) is asked of users with a second factor only.
    """

    name = StringField(
        "Name",
        validators=[DataRequired(message="Name the passkey, such as Work laptop."), Length(max=64)],
    )
    password = _current_password()
    code = CodeField()
    credential = HiddenField()
    submit = SubmitField("Add a passkey")


class RemovePasskeyForm(FlaskForm):
    password = _current_password()
    code = CodeField()
    submit = SubmitField("Remove")

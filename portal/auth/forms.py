"""The sign-in forms: email and password, then the two-factor code."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import EmailField, HiddenField, PasswordField, StringField, SubmitField
from wtforms.validators import DataRequired, Length, Optional

from portal.services.accounts import MIN_PASSWORD_LENGTH

# A new password: long enough, and not so long that hashing it costs more than a sign-in.
PASSWORD_LENGTH = Length(
    min=MIN_PASSWORD_LENGTH, max=1024, message=f"Use at least {MIN_PASSWORD_LENGTH} characters."
)


class SignInForm(FlaskForm):
    email = EmailField("Email", validators=[DataRequired(), Length(max=254)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)])
    next = HiddenField()
    submit = SubmitField("Sign in")


class CodeField(StringField):
    """A one-time code: 6 digits from the authenticator app, or a recovery code where accepted.

    Optional for WTForms: `two_factor.check_code` says what is missing or wrong. What was typed
    is never written back into the page (as a password field does not): a refused code would
    otherwise sit in the HTML, in the browser's history and in any cache on the way.
    """

    def __init__(self, label: str = "Authenticator code", **kwargs: object) -> None:
        too_long = "That is longer than any code. Enter the code your authenticator app shows."
        super().__init__(label, validators=[Optional(), Length(max=64, message=too_long)], **kwargs)

    def _value(self) -> str:
        return ""


class TwoFactorSignInForm(FlaskForm):
    code = CodeField("Authenticator or recovery code")
    submit = SubmitField("Verify")

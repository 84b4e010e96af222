"""The sign-in forms: email and password, then the two-factor code; a forgotten password, and
the password set from a one-time link."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import EmailField, HiddenField, PasswordField, SubmitField
from wtforms.validators import DataRequired, EqualTo, Length

from portal.web.fields import PASSWORD_LENGTH, CodeField, EmailAddressField


class SignInForm(FlaskForm):
    email = EmailField("Email", validators=[DataRequired(), Length(max=254)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)])
    next = HiddenField()
    submit = SubmitField("Sign in")


class TwoFactorSignInForm(FlaskForm):
    code = CodeField("Authenticator or recovery code")
    submit = SubmitField("Verify")


class ForgotPasswordForm(FlaskForm):
    email = EmailAddressField()
    submit = SubmitField("Send me a link")


class NewPasswordForm(FlaskForm):
    """The password set from an invitation or a reset link."""

    new_password = PasswordField(
        "New password", validators=[DataRequired(message="Enter a new password."), PASSWORD_LENGTH]
    )
    new_password_again = PasswordField(
        "New password again",
        validators=[EqualTo("new_password", message="Type the same new password twice.")],
    )
    submit = SubmitField("Set password")

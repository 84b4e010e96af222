"""The sign-in forms: email and password, then the two-factor code."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import EmailField, HiddenField, PasswordField, SubmitField
from wtforms.validators import DataRequired, Length

from portal.web.fields import CodeField


class SignInForm(FlaskForm):
    email = EmailField("Email", validators=[DataRequired(), Length(max=254)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)])
    next = HiddenField()
    submit = SubmitField("Sign in")


class TwoFactorSignInForm(FlaskForm):
    code = CodeField("Authenticator or recovery code")
    submit = SubmitField("Verify")

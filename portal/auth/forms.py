"""The sign-in form."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import EmailField, HiddenField, PasswordField, SubmitField
from wtforms.validators import DataRequired, Length


class SignInForm(FlaskForm):
    email = EmailField("Email", validators=[DataRequired(), Length(max=254)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)])
    next = HiddenField()
    submit = SubmitField("Sign in")

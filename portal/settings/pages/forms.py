"""Forms of the settings pages."""

from __future__ import annotations

import re
from decimal import Decimal

from flask_wtf import FlaskForm
from wtforms import (
    BooleanField,
    IntegerField,
    PasswordField,
    SelectChoice,
    SelectField,
    StringField,
    SubmitField,
    URLField,
)
from wtforms.validators import (
    DataRequired,
    InputRequired,
    Length,
    NumberRange,
    Optional,
    ValidationError,
)

from portal.identity.models import Role
from portal.money.rules.currencies import WITHDRAWAL_WALLETS
from portal.money.rules.refunds import MAX_LINK_DAYS
from portal.payments.rules.mirror_money import MAX_TOLERANCE
from portal.payments.rules.shops import is_support_email
from portal.settings.models import Environment
from portal.settings.pages.connection_messages import url_problem_sentence
from portal.settings.rules.connection import base_url_problem
from portal.web.fields import PASSWORD_LENGTH, CodeField, EmailAddressField, strip
from portal.web_urls import is_web_url

ROLE_CHOICES = [SelectChoice(role.value, role.label) for role in Role]

_PERCENT = re.compile(r"\d{1,2}(\.\d{1,2})?")
TOLERANCE_SHAPE = (
    "Enter a percent from 0 to 10 with at most 2 decimals, such as 0.5 (0: no tolerance)."
)


TOKEN_LENGTH = Length(min=8, max=512)
# The step-up of an owner with two-factor on (`portal.web.step_up`); the templates show the
# field only to them.
STEP_UP_LABEL = "Your authenticator code"


def _base_url(_form: FlaskForm, field: URLField) -> None:
    problem = base_url_problem(field.data or "")
    if problem:
        raise ValidationError(url_problem_sentence(problem))


def _clean_url(value: str | None) -> str | None:
    return value.strip().rstrip("/") if value else value


def _shop_url(_form: FlaskForm, field: URLField) -> None:
    if field.data and not is_web_url(field.data):
        raise ValidationError("Enter an address starting with http:// or https://.")


def _token_characters(_form: FlaskForm, field: PasswordField) -> None:
    """A token is one word: a space or line break inside it is a pasting mistake."""
    if field.data and any(char.isspace() or not char.isprintable() for char in field.data):
        raise ValidationError("A token has no spaces or line breaks: paste it again.")


class ApiSettingsForm(FlaskForm):
    """Tokens are never sent back to the browser: an empty field keeps the stored one, as long
    as the base URL and environment stay the same (`connection.credentials_to_check`)."""

    base_url = URLField(
        "Base URL",
        validators=[DataRequired(), Length(max=2048), _base_url],
        filters=[_clean_url],
    )
    environment = SelectField(
        "Environment", choices=[SelectChoice(env.value, env.label) for env in Environment]
    )
    token = PasswordField(
        "Application token",
        validators=[Optional(), TOKEN_LENGTH, _token_characters],
        filters=[strip],
    )
    company_token = PasswordField(
        "Company token (optional)",
        validators=[Optional(), TOKEN_LENGTH, _token_characters],
        filters=[strip],
    )
    remove_company_token = BooleanField("Remove the stored company token")
    code = CodeField(STEP_UP_LABEL)
    submit = SubmitField("Check and save")


class NewUserForm(FlaskForm):
    """A new user starts at the least privileged role; they replace the password at first
    sign-in (`User.must_choose_password`)."""

    email = EmailAddressField()
    role = SelectField("Role", choices=ROLE_CHOICES, default=Role.ACCOUNTANT.value)
    password = PasswordField("Password", validators=[DataRequired(), PASSWORD_LENGTH])
    code = CodeField(STEP_UP_LABEL)
    submit = SubmitField("Add user")


class InviteForm(FlaskForm):
    """Shown on the same page as `NewUserForm`: made with prefix="invite" (unique ids). The
    person sets their own password from the mailed link."""

    email = EmailAddressField()
    role = SelectField("Role", choices=ROLE_CHOICES, default=Role.ACCOUNTANT.value)
    code = CodeField(STEP_UP_LABEL)
    submit = SubmitField("Send invitation")


class EditUserForm(FlaskForm):
    role = SelectField("Role", choices=ROLE_CHOICES)
    password = PasswordField(
        "New password (optional)",
        validators=[Optional(), PASSWORD_LENGTH],
    )
    turn_off_two_factor = BooleanField("Turn off their two-factor sign-in")
    code = CodeField(STEP_UP_LABEL)
    submit = SubmitField("Save changes")


class PercentField(StringField):
    """A percent between 0 and `MAX_TOLERANCE`, with at most 2 decimals: an exact Decimal."""

    def process_formdata(self, valuelist: list[str]) -> None:
        self.raw = valuelist[0].strip() if valuelist else ""
        self.data = Decimal(self.raw) if _PERCENT.fullmatch(self.raw) else None

    def _value(self) -> str:
        return getattr(self, "raw", None) or ("" if self.data is None else format(self.data, "f"))

    def pre_validate(self, form: object) -> None:
        if self.data is None or self.data > MAX_TOLERANCE:
            raise ValidationError(TOLERANCE_SHAPE)


class ToleranceForm(FlaskForm):
    """The payment tolerance: a difference of at most this share of the due counts as none."""

    payment_tolerance_percent = PercentField("Payment tolerance (%)")
    # Beside the checkout settings' own code field on one page: another element id.
    code = CodeField(STEP_UP_LABEL, id="tolerance-code")
    save_tolerance = SubmitField("Save tolerance")


class RefundLinkForm(FlaskForm):
    """How long a refund's claim link waits for the customer's address."""

    refund_link_days = IntegerField(
        "Refund links expire after (days)",
        validators=[
            InputRequired("Enter a number of days."),
            NumberRange(min=1, max=MAX_LINK_DAYS, message=f"From 1 to {MAX_LINK_DAYS} days."),
        ],
    )
    code = CodeField(STEP_UP_LABEL, id="refund-link-code")
    save_link_days = SubmitField("Save link period")


class ReportingCurrencyForm(FlaskForm):
    """The reporting currency, among those the payment service quotes against every wallet
    currency now (`offer`)."""

    reporting_currency = SelectField("Reporting currency", choices=[], validate_choice=False)
    # Beside the other forms' code fields on one page: another element id.
    code = CodeField(STEP_UP_LABEL, id="reporting-code")
    save_reporting_currency = SubmitField("Save reporting currency")

    def offer(self, currencies: list[str]) -> None:
        self.reporting_currency.choices = [SelectChoice(code, code) for code in currencies]

    def validate_reporting_currency(self, field: SelectField) -> None:
        if field.data not in {choice.value for choice in field.choices}:
            raise ValidationError(
                f"The payment service does not quote {field.data or 'that'} against every wallet "
                f"currency ({', '.join(WITHDRAWAL_WALLETS)}): choose one of the list."
            )


class RequireTwoFactorForm(FlaskForm):
    """On the users page beside `NewUserForm`, hence fields of other names than its own."""

    required = BooleanField("Require two-factor sign-in for every user")
    passkey_for_approvals = BooleanField("Require a passkey for approvals")
    requirement_code = CodeField(STEP_UP_LABEL)
    save_requirement = SubmitField("Save requirement")


class RemoveUserForm(FlaskForm):
    code = CodeField(STEP_UP_LABEL)
    submit = SubmitField("Remove user")


class CheckoutSettingsForm(FlaskForm):
    """What customers see on the public checkout page; every field may be left empty."""

    display_name = StringField(
        "Display name", validators=[Optional(), Length(max=120)], filters=[strip]
    )
    shop_url = URLField(
        "Shop URL", validators=[Optional(), Length(max=2048), _shop_url], filters=[strip]
    )
    support_email = EmailAddressField(
        "Support email", optional=True, also=is_support_email, example="support@example.com"
    )
    code = CodeField(STEP_UP_LABEL)
    submit = SubmitField("Save")

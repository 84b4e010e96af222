"""Form fields and checks shared by several forms: amounts, currencies, addresses, email
addresses, one-time codes and new passwords.

Bad input is caught here, next to its field, before anything is sent to the API.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from decimal import Decimal, InvalidOperation

from flask_wtf import FlaskForm
from markupsafe import Markup
from wtforms import EmailField, Field, SelectChoice, SelectField, StringField
from wtforms.validators import DataRequired, InputRequired, Length, Optional, ValidationError
from wtforms.widgets import Select

from portal.identity.rules.accounts import EMAIL_LENGTH, MIN_PASSWORD_LENGTH, looks_like_email
from portal.money.rules.currencies import AMOUNT_DECIMALS, CURRENCY_CODES, address_shape

_AMOUNT = re.compile(r"\d+(\.\d+)?|\.\d+")
# An address in a currency whose shape the portal does not know: anything without spaces.
_ANY_ADDRESS = re.compile(r"[^\s]{8,255}")


def parse_amount(text: str, *, zero: bool = False) -> Decimal:
    """A positive plain decimal (or, with `zero`, nothing as well) with at most the API's 8
    decimals; ValueError says what is wrong."""
    text = text.strip()
    if not _AMOUNT.fullmatch(text):
        raise ValueError(f"Enter {'an' if zero else 'a positive'} amount in digits, such as 0.25.")
    amount = Decimal(text)
    if amount <= 0 and not (zero and amount == 0):
        raise ValueError("Enter an amount greater than zero.")
    exponent = amount.as_tuple().exponent
    assert isinstance(exponent, int)  # the pattern admits finite numbers only
    if -exponent > AMOUNT_DECIMALS:
        raise ValueError(f"Use at most {AMOUNT_DECIMALS} decimal places.")
    return amount


class AmountField(StringField):
    """An amount as a `Decimal` (never a float); empty is None, for optional amounts. With
    `zero`, nothing is an amount too (a balance)."""

    data: Decimal | None
    raw_data: list[str]

    def __init__(self, label: str, *, zero: bool = False, **kwargs: object) -> None:
        super().__init__(label, **kwargs)
        self.zero = zero

    def process_formdata(self, valuelist: list[str]) -> None:
        self.data = None
        self.raw_text = valuelist[0].strip() if valuelist else ""
        if not self.raw_text:
            self.raw_data = []  # only spaces is no input: InputRequired refuses it, Optional skips
        else:
            try:
                self.data = parse_amount(self.raw_text, zero=self.zero)
            except (ValueError, InvalidOperation) as problem:
                raise ValueError(str(problem)) from None

    @property
    def entered(self) -> Decimal:
        """The amount of a field known to hold one: a required field of a validated form."""
        assert self.data is not None, "an amount is read before its form was validated"
        return self.data

    def _value(self) -> str:
        if self.raw_data:
            return self.raw_data[0]
        return "" if self.data is None else format(self.data, "f")


class CurrencyField(SelectField):
    """One of the known currencies; anything else is refused with words a person understands."""

    def __init__(self, label: str, **kwargs: object) -> None:
        choices = [SelectChoice("", "Choose a currency")]
        choices += [SelectChoice(code, code) for code in CURRENCY_CODES]
        super().__init__(label, choices=choices, validate_choice=False, **kwargs)

    def pre_validate(self, form: FlaskForm) -> None:
        if self.data not in CURRENCY_CODES:
            raise ValidationError("Choose one of the currencies in the list.")

    def offer(self, codes: Iterable[str]) -> None:
        """Offer only `codes` (those the payment service names), and the one already chosen;
        what the service refuses of a known currency, its error code explains."""
        named = set(codes)
        offered = [code for code in CURRENCY_CODES if code in named or code == self.data]
        self.choices = [SelectChoice("", "Choose a currency")]
        self.choices += [SelectChoice(code, code) for code in offered]


def address_problem(currency: str | None, address: str) -> str | None:
    """Why `address` cannot be an address in `currency`, or None when its shape fits."""
    shape = address_shape(currency)
    if shape is None:
        return None if _ANY_ADDRESS.fullmatch(address) else "Enter the address without spaces."
    return None if shape.fits(address) else f"Enter {shape.described}."


class AddressOf:
    """Validator: the field holds an address in the currency chosen in field `currency_field`."""

    def __init__(self, currency_field: str) -> None:
        self.currency_field = currency_field

    def __call__(self, form: FlaskForm, field: Field) -> None:
        currency = form[self.currency_field].data
        if currency not in CURRENCY_CODES:
            return  # the currency field says what is wrong
        problem = address_problem(currency, field.data or "")
        if problem:
            raise ValidationError(problem)


class AddressField(StringField):
    """A required address, checked against the currency chosen in field `currency_field`."""

    def __init__(self, label: str, currency_field: str, missing: str, **kwargs: object) -> None:
        validators = [InputRequired(missing), Length(max=255), AddressOf(currency_field)]
        super().__init__(label, validators=validators, filters=[strip], **kwargs)


def strip(value: str | None) -> str | None:
    return value.strip() if isinstance(value, str) else value


class EmailAddressField(EmailField):
    """One email address, never a list: every form where an address is typed uses this field,
    since a mail to "a@x.example,b@y.example" would reach both (an invitation's link too).
    Required unless `optional`; `also` is a further check of the address (the support address
    must fit in a `mailto:` link), refused in the same words, which give `example`."""

    def __init__(
        self,
        label: str = "Email",
        *,
        optional: bool = False,
        also: Callable[[str], bool] | None = None,
        example: str = "name@example.com",
        **kwargs: object,
    ) -> None:
        self.also = also
        self.refusal = f"Enter one email address, such as {example}."
        presence = Optional() if optional else DataRequired()
        validators = [presence, Length(max=EMAIL_LENGTH), self._one_address]
        super().__init__(label, validators=validators, filters=[strip], **kwargs)

    @staticmethod
    def _one_address(_form: FlaskForm, field: EmailAddressField) -> None:
        if not looks_like_email(field.data) or (field.also and not field.also(field.data)):
            raise ValidationError(field.refusal)


# A new password: long enough, and not so long that hashing it costs more than a sign-in.
PASSWORD_LENGTH = Length(
    min=MIN_PASSWORD_LENGTH, max=1024, message=f"Use at least {MIN_PASSWORD_LENGTH} characters."
)


class CodeField(StringField):
    """A one-time code: 6 digits from the authenticator app, or a recovery code where accepted.

    Optional for WTForms: `portal.web.step_up` says what is missing or wrong. What was typed
    is never written back into the page (as a password field does not): a refused code would
    otherwise sit in the HTML, in the browser's history and in any cache on the way.
    """

    def __init__(self, label: str = "Authenticator code", **kwargs: object) -> None:
        too_long = "That is longer than any code. Enter the code your authenticator app shows."
        super().__init__(label, validators=[Optional(), Length(max=64, message=too_long)], **kwargs)

    def _value(self) -> str:
        return ""


class LongListSelect(Select):
    """A select of hundreds of options that never change (every time zone): each option's markup
    is made once per process instead of on every page that shows the list, where WTForms' making
    of 600 options took longer than the rest of the account page together."""

    @classmethod
    def render_option(cls, choice: SelectChoice, **kwargs: object) -> Markup:
        if choice.render_kw or kwargs:
            return super().render_option(choice, **kwargs)
        return _option(choice.value, choice.label, bool(choice.selected))


@functools.cache
def _option(value: str, label: str, selected: bool) -> Markup:
    choice = SelectChoice(value, label)
    choice.selected = selected
    return Select.render_option(choice)

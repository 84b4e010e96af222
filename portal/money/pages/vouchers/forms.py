"""Forms of the voucher pages: the list's filters, create, cancel and pay off."""

from __future__ import annotations

import re
from typing import ClassVar

from flask_wtf import FlaskForm
from wtforms import StringField, SubmitField
from wtforms.validators import InputRequired, Length, Regexp

from portal.web.fields import AmountField, CodeField, CurrencyField
from portal.web.filters import CURRENCY_PATTERN, ListField, ListFilters, bounds, status_field
from portal.web.idempotent_forms import IdempotencyKeyField

# The status filter's words for the API's codes, as the list says them (templates/vouchers/
# _status.html): code 1 ("successful") is both an active voucher and a redeemed one.
STATUS_WORDS = {0: "new", 1: "active or redeemed", 2: "canceled", 3: "expired"}


class VoucherFilters(ListFilters):
    """Every filter and sort of the voucher list (docs/sandbox.md, "The API as documented")."""

    SORTS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("amount", "Amount"),
        ("status", "Status"),
        ("created", "Created"),
        ("updated", "Updated"),
    )

    status = status_field(STATUS_WORDS)
    currency = ListField(
        "Currency", item=CURRENCY_PATTERN, item_message="Use codes such as BTC.", upper=True
    )
    amount_from, amount_to = bounds("Amount", "amount")


class NewVoucherForm(FlaskForm):
    """A voucher's code pays out to whoever redeems it: `code` is asked of owners with
    two-factor sign-in on, as for a withdrawal."""

    amount = AmountField("Amount", validators=[InputRequired("Enter the voucher's amount.")])
    currency = CurrencyField("Currency")
    code = CodeField()
    intent = IdempotencyKeyField()
    submit = SubmitField("Create voucher")


class RevealCodeForm(FlaskForm):
    """Revealing a voucher's code hands out its money: a fresh code first, with two-factor on."""

    code = CodeField()
    submit = SubmitField("Reveal code")


class CancelVoucherForm(FlaskForm):
    submit = SubmitField("Cancel voucher")


# Codes are letters and digits, maybe grouped by dashes (the sandbox's are XXXX-XXXX-XXXX-XXXX).
CODE_SHAPE = re.compile(r"^[A-Za-z0-9]+(-[A-Za-z0-9]+)*\Z")
_GROUP_BREAK = re.compile(r"[\s-]+")


def normalise_code(value: str | None) -> str | None:
    """A code as the API issues it, however it was typed or pasted: the payment service matches
    codes exactly, and issues them in capitals with groups joined by dashes, so `abcd efgh`,
    ` ABCD - EFGH ` and `abcd-efgh` are all `ABCD-EFGH`."""
    if not isinstance(value, str):
        return value
    return "-".join(group for group in _GROUP_BREAK.split(value.upper()) if group)


class PayOffForm(FlaskForm):
    code = StringField(
        "Voucher code",
        validators=[
            InputRequired("Enter the voucher code."),
            Length(min=4, max=128, message="A voucher code has between 4 and 128 characters."),
            Regexp(CODE_SHAPE, message="A voucher code has only letters, digits and dashes."),
        ],
        filters=[normalise_code],
    )
    submit = SubmitField("Pay off")

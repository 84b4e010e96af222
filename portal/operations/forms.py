"""Forms of the operations pages: the list filters, create, and the actions on an operation."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import ClassVar
from urllib.parse import urlsplit

from flask_wtf import FlaskForm
from wtforms import (
    HiddenField,
    SelectChoice,
    SelectField,
    SelectMultipleField,
    StringField,
    SubmitField,
    URLField,
)
from wtforms.validators import DataRequired, Length, Optional, ValidationError

from portal.api import OPERATION_STATUSES
from portal.listing import (
    CURRENCY_PATTERN,
    ID_PATTERN,
    ListField,
    ListFilters,
    bounds,
    status_field,
)

# At most 8 decimals (the API's precision) and 12 digits before the point.
AMOUNT_PATTERN = re.compile(r"\d{1,12}(\.\d{1,8})?")
CATEGORIES = [
    SelectChoice("", "Any"),
    SelectChoice("application", "Application"),
    SelectChoice("manual", "Manual"),
    SelectChoice("transfer", "Withdrawal"),
    SelectChoice("internal_transfer", "Internal transfer"),
]


class OperationFilters(ListFilters):
    """Every filter and sort of the operations list (section 4.4 of the API documentation)."""

    SORTS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("id", "Id"),
        ("category", "Category"),
        ("order_id", "Order number"),
        ("amount", "Amount"),
        ("fee", "Fee"),
        ("amount_paid", "Amount paid"),
        ("rate", "Rate"),
        ("currency", "Currency"),
        ("currency_paid", "Payment currency"),
        ("created", "Created"),
        ("updated", "Updated"),
    )

    id = ListField("Id", item=ID_PATTERN, item_message="Ids are letters and digits.")
    order_id = ListField("Order number")
    category = SelectField("Category", choices=CATEGORIES, default="")
    status = status_field(OPERATION_STATUSES)
    amount_from, amount_to = bounds("Amount", "amount")
    fee_from, fee_to = bounds("Fee", "fee")
    amount_paid_from, amount_paid_to = bounds("Amount paid", "amount_paid")
    currency = ListField(
        "Currency", item=CURRENCY_PATTERN, item_message="Use codes such as BTC.", upper=True
    )
    currency_paid = ListField(
        "Payment currency",
        item=CURRENCY_PATTERN,
        item_message="Use codes such as BTC.",
        upper=True,
    )
    address = StringField("Address", validators=[Optional(), Length(max=255)])


def _amount(_form: FlaskForm, field: StringField) -> None:
    text = (field.data or "").strip()
    if not AMOUNT_PATTERN.fullmatch(text):
        raise ValidationError("Enter an amount such as 12.5, with at most 8 decimals.")
    if Decimal(text) <= 0:
        raise ValidationError("The amount must be greater than zero.")


def _http_url(_form: FlaskForm, field: URLField) -> None:
    parts = urlsplit(field.data or "")
    if parts.scheme not in ("http", "https") or not parts.hostname or " " in field.data:
        raise ValidationError("Enter an address starting with http:// or https://.")


def _strip(value: str | None) -> str | None:
    return value.strip() if isinstance(value, str) else value


class NewOperationForm(FlaskForm):
    """Create an operation; the currencies are those of the current rates."""

    amount = StringField(
        "Amount", validators=[DataRequired("Enter the amount."), _amount], filters=[_strip]
    )
    currency = SelectField("Currency", choices=[])
    payment_currency = SelectField("Payment currency", choices=[], default="")
    order_id = StringField(
        "Order number",
        validators=[DataRequired("Enter the order number."), Length(max=255)],
        filters=[_strip],
    )
    redirect_url = URLField(
        "Redirect URL", validators=[Optional(), Length(max=2048), _http_url], filters=[_strip]
    )
    submit = SubmitField("Create operation")

    def offer(self, currencies: list[str]) -> None:
        """The currencies the rates know; the payment currency may stay the currency."""
        self.currency.choices = [SelectChoice(code, code) for code in currencies]
        self.payment_currency.choices = [
            SelectChoice("", "Same as the currency"),
            *(SelectChoice(code, code) for code in currencies),
        ]


class TransactionsActionForm(FlaskForm):
    """Link or reject transactions of one operation; `confirm` is set on the confirmation step."""

    transaction_id = SelectMultipleField("Transactions", choices=[])
    reason = StringField("Reason", validators=[Optional(), Length(max=255)], filters=[_strip])
    confirm = HiddenField()

    def offer(self, transaction_ids: list[str]) -> None:
        self.transaction_id.choices = [SelectChoice(tid, tid) for tid in transaction_ids]

    def validate_transaction_id(self, field: SelectMultipleField) -> None:
        if not field.data:
            raise ValidationError("Select at least one transaction.")


class RejectForm(TransactionsActionForm):
    reason = StringField(
        "Reason",
        validators=[DataRequired("Enter the reason for the rejection."), Length(max=255)],
        filters=[_strip],
    )


class CancelForm(FlaskForm):
    confirm = HiddenField()

"""Forms of the operations pages: the list filters, create, and the actions on an operation."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import ClassVar

from flask_wtf import FlaskForm
from wtforms import (
    BooleanField,
    HiddenField,
    SelectChoice,
    SelectField,
    SelectMultipleField,
    StringField,
    SubmitField,
    URLField,
)
from wtforms.validators import DataRequired, InputRequired, Length, Optional, ValidationError

from portal.api import OPERATION_STATUSES
from portal.money.rules.currencies import SMALLEST_AMOUNT, is_fiat
from portal.payments.rules.operation_list import MIRROR_FILTERS, MIRROR_SORTS
from portal.payments.rules.operation_money import State
from portal.payments.rules.state_words import STATE_WORDS
from portal.web.fields import AmountField, strip
from portal.web.filters import (
    CURRENCY_PATTERN,
    ID_PATTERN,
    ListField,
    ListFilters,
    bounds,
    status_field,
)
from portal.web.formatting import CATEGORY_NAMES
from portal.web.idempotent_forms import IdempotencyKeyField
from portal.web_urls import is_web_url

# An amount as `portal.web.fields.parse_amount` takes it (at most 8 decimals, the API's precision),
# with at least one and at most 12 digits before the point, in this page's own words.
MAX_WHOLE_DIGITS = 12
AMOUNT_SHAPE = "Enter an amount such as 12.5, with at most 8 decimals."
AMOUNT_NOT_POSITIVE = "The amount must be greater than zero."
CATEGORIES = [
    SelectChoice("", "Any"),
    *(SelectChoice(value, name) for value, name in CATEGORY_NAMES.items()),
]

NEW_STATUS = next(code for code, text in OPERATION_STATUSES.items() if text == "new")
STATE_CHOICES = [
    SelectChoice("", "Any"),
    *(SelectChoice(state.value, STATE_WORDS[state]) for state in State),
]
# The mirror keeps amounts as exact text: it can tell states, not amounts apart.
NOT_FROM_THE_MIRROR = (
    "A state is read from the last sync, which cannot answer this filter: clear it, or "
    "choose any state."
)
RECEIVED_CHOICES = [
    SelectChoice("", "Any"),
    SelectChoice("received", "Partly paid or overpaid (new, money received)"),
]


class OperationFilters(ListFilters):
    """Every filter and sort of the operations list (docs/sandbox.md, "The API as documented")."""

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
    # The API finds whole order numbers only, never a part of one.
    order_id = ListField("Order number (exact match)")
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
    received = SelectField("Payment", choices=RECEIVED_CHOICES, default="")
    # The API knows no states: a state is answered from the mirror (`operation_pages`).
    state = SelectField("State", choices=STATE_CHOICES, default="")

    def validate(self, extra_validators: Mapping | None = None) -> bool:
        """The fields' checks, then: "money received" is about `new` operations only, and with
        a state only the filters and sorts the mirror answers."""
        valid = super().validate(extra_validators)
        if self.state.data and valid:
            unanswered = [
                field
                for field in self
                if field.name not in MIRROR_FILTERS and field.data not in (None, "", [])
            ]
            if self.sort.data and self.sort.data not in MIRROR_SORTS:
                unanswered.append(self.sort)
            for field in unanswered:
                field.errors = [NOT_FROM_THE_MIRROR]
            if unanswered:
                return False
        if self.received.data and self.status.data and NEW_STATUS not in self.status.data:
            self.received.errors = [
                "Money received but not confirmed is an operation still new: tick New, or no "
                "status."
            ]
            return False
        return valid

    def api_filters(self) -> dict[str, object]:
        """The API filters by status only: "money received" asks it for the `new` operations
        whose `amount_paid` is at least the smallest amount, so that its pages and total count
        exactly those."""
        filters = super().api_filters()
        if filters.pop("received", None):
            filters["status"] = [NEW_STATUS]
            given = self.amount_paid_from.data
            filters["amount_paid_from"] = max(given, SMALLEST_AMOUNT) if given else SMALLEST_AMOUNT
        return filters


def _is_zero(text: str) -> bool:
    """Digits (a point allowed) that make zero: an amount, only not above zero."""
    try:
        return text.partition(".")[0].isdecimal() and Decimal(text) == 0
    except InvalidOperation:
        return False


class OperationAmountField(AmountField):
    """An `AmountField` that also wants a digit before the point, and at most 12 of them."""

    def process_formdata(self, valuelist: list[str]) -> None:
        try:
            super().process_formdata(valuelist)
        except ValueError:
            zero = _is_zero(self.raw_text)
            raise ValueError(AMOUNT_NOT_POSITIVE if zero else AMOUNT_SHAPE) from None
        whole = self.raw_text.partition(".")[0]
        if self.data is not None and not 1 <= len(whole) <= MAX_WHOLE_DIGITS:
            self.data = None
            raise ValueError(AMOUNT_SHAPE)


def _order_number_shape(_form: FlaskForm, field: StringField) -> None:
    """The operations list reads `A,B` as two order numbers: such an operation could not be
    found again by its order number (after a lost answer, or from the checkout page). A tab or
    a line break would split the number's cell in an accountant's spreadsheet."""
    value = field.data or ""
    if "," in value:
        raise ValidationError(
            "An order number cannot contain a comma: the operations list would read it as two "
            "order numbers. Use another character, such as - or /."
        )
    if any(char in value for char in "\t\r\n"):
        raise ValidationError("An order number is one line, without tabs or line breaks.")


def _http_url(_form: FlaskForm, field: URLField) -> None:
    if not is_web_url(field.data):
        raise ValidationError("Enter an address starting with http:// or https://.")


class NewOperationForm(FlaskForm):
    """Create an operation; the currencies are those of the current rates."""

    amount = OperationAmountField("Amount", validators=[InputRequired("Enter the amount.")])
    currency = SelectField("Currency", choices=[])
    payment_currency = SelectField("Payment currency", choices=[], default="")
    order_id = StringField(
        "Order number",
        validators=[DataRequired("Enter the order number."), Length(max=255), _order_number_shape],
        filters=[strip],
    )
    redirect_url = URLField(
        "Redirect URL", validators=[Optional(), Length(max=2048), _http_url], filters=[strip]
    )
    intent = IdempotencyKeyField()
    submit = SubmitField("Create operation")

    def offer(self, currencies: list[str]) -> None:
        """The currencies the rates know; the customer pays in a crypto currency, by default
        the price's own, or for a fiat price the first crypto currency."""
        crypto = [code for code in currencies if not is_fiat(code)]
        fiat = [code for code in currencies if is_fiat(code)]
        self.fiat_default = crypto[0] if crypto else None
        same = "Same as the currency"
        if fiat and self.fiat_default:
            same += f" ({self.fiat_default} for a price in {', '.join(fiat)})"
        self.currency.choices = [SelectChoice(code, code) for code in currencies]
        self.payment_currency.choices = [
            SelectChoice("", same),
            *(SelectChoice(code, code) for code in crypto),
        ]

    def paid_in(self) -> str | None:
        """The payment currency to ask for: the one chosen, or for a fiat price the default
        crypto currency (a fiat currency cannot be paid on a blockchain)."""
        if self.payment_currency.data:
            return self.payment_currency.data
        return self.fiat_default if is_fiat(self.currency.data) else None


class TransactionsActionForm(FlaskForm):
    """Link or reject transactions of one operation; `confirm` is set on the confirmation step."""

    transaction_id = SelectMultipleField("Transactions", choices=[])
    reason = StringField("Reason", validators=[Optional(), Length(max=255)], filters=[strip])
    confirm = HiddenField()
    # Only a rejection asks for it, when a chosen transaction already pays the operation.
    paid_ones_too = BooleanField("Yes, reject transactions that already count as paid")
    # Only a link below the due asks for it; `underpayment` is the figure the person saw.
    accept_underpayment = BooleanField("Accept the underpayment")
    underpayment = HiddenField()

    def offer(self, transaction_ids: list[str]) -> None:
        self.transaction_id.choices = [SelectChoice(tid, tid) for tid in transaction_ids]

    def accepted_underpayment(self) -> Decimal | None:
        """The shortfall the person ticked to accept, as their confirmation showed it; None
        without the tick (or with a figure that is not one)."""
        if not self.accept_underpayment.data:
            return None
        try:
            figure = Decimal(self.underpayment.data or "")
        except InvalidOperation:
            return None
        return figure if figure.is_finite() else None

    def validate_transaction_id(self, field: SelectMultipleField) -> None:
        if not field.data:
            raise ValidationError("Select at least one transaction.")


class RejectForm(TransactionsActionForm):
    reason = StringField(
        "Reason",
        validators=[DataRequired("Enter the reason for the rejection."), Length(max=255)],
        filters=[strip],
    )


class CancelForm(FlaskForm):
    confirm = HiddenField()

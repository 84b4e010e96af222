"""Forms of the cross exchange pages."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import StringField, SubmitField
from wtforms.validators import InputRequired, Length, Regexp

from portal.money.pages.deals import DealForm
from portal.web.fields import AddressField, strip
from portal.web.idempotent_forms import IdempotencyKeyField


class CrossExchangeForm(DealForm):
    sell_address = AddressField(
        "Refund address",
        "sell_currency",
        "Enter the address to refund to if the cross exchange fails.",
    )
    buy_address = AddressField(
        "Payout address", "buy_currency", "Enter the address the bought currency is paid out to."
    )
    intent = IdempotencyKeyField()
    submit = SubmitField("Create cross exchange")


class LookUpForm(FlaskForm):
    """Any cross exchange by its id, made through the portal or not."""

    class Meta:
        csrf = False

    id = StringField(
        "Cross exchange id",
        validators=[
            InputRequired("Enter the id of a cross exchange."),
            Length(max=64),
            Regexp(r"^[A-Za-z0-9_-]+\Z", message="An id has only letters, digits, - and _."),
        ],
        filters=[strip],
    )
    submit = SubmitField("Look up")


class CancelCrossExchangeForm(FlaskForm):
    submit = SubmitField("Cancel cross exchange")

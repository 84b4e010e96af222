"""The withdrawal form and its confirmation."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import StringField, SubmitField
from wtforms.validators import InputRequired, Length

from portal.fields import AddressOf, AmountField, CurrencyField, strip


class WithdrawalForm(FlaskForm):
    amount = AmountField("Amount", validators=[InputRequired("Enter the amount to withdraw.")])
    wallet = CurrencyField("Wallet")
    address = StringField(
        "Address",
        validators=[
            InputRequired("Enter the destination address."),
            Length(max=255),
            AddressOf("wallet"),
        ],
        filters=[strip],
    )
    submit = SubmitField("Review")


class ConfirmWithdrawalForm(FlaskForm):
    submit = SubmitField("Confirm withdrawal")

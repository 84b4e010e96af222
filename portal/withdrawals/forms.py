"""The withdrawal form and its confirmation."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import StringField, SubmitField
from wtforms.validators import InputRequired, Length

from portal.auth.forms import CodeField
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
    """`code` is asked for (and checked by the view) only of users with two-factor sign-in on."""

    code = CodeField()
    submit = SubmitField("Confirm withdrawal")

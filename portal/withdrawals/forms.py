"""The withdrawal form and its confirmation."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import SubmitField
from wtforms.validators import InputRequired

from portal.web.fields import AddressField, AmountField, CodeField, CurrencyField


class WithdrawalForm(FlaskForm):
    amount = AmountField("Amount", validators=[InputRequired("Enter the amount to withdraw.")])
    wallet = CurrencyField("Wallet")
    address = AddressField("Address", "wallet", "Enter the destination address.")
    submit = SubmitField("Review")


class ConfirmWithdrawalForm(FlaskForm):
    """`code` is asked for (and checked by the view) only of users with two-factor sign-in on."""

    code = CodeField()
    submit = SubmitField("Confirm withdrawal")

"""The withdrawal form and its confirmation."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import SelectChoice, SubmitField
from wtforms.validators import InputRequired, ValidationError

from portal.web.fields import CURRENCIES, AddressField, AmountField, CodeField, CurrencyField

# A withdrawal goes to a blockchain address, so only a crypto currency's wallet can send one:
# USD has no address to send to.
FIAT = frozenset({"USD"})
WALLETS = tuple(code for code in CURRENCIES if code not in FIAT)


class WalletField(CurrencyField):
    """The wallet a withdrawal leaves from: a crypto currency, never a fiat one."""

    def __init__(self, label: str, **kwargs: object) -> None:
        super().__init__(label, **kwargs)
        self.choices = [SelectChoice("", "Choose a wallet")]
        self.choices += [SelectChoice(code, code) for code in WALLETS]

    def pre_validate(self, form: FlaskForm) -> None:
        if self.data in FIAT:
            raise ValidationError(
                f"A withdrawal goes to a blockchain address, so it cannot leave the {self.data} "
                f"wallet: choose {', '.join(WALLETS[:-1])} or {WALLETS[-1]}."
            )
        super().pre_validate(form)


class WithdrawalForm(FlaskForm):
    amount = AmountField("Amount", validators=[InputRequired("Enter the amount to withdraw.")])
    wallet = WalletField("Wallet")
    address = AddressField("Address", "wallet", "Enter the destination address.")
    submit = SubmitField("Review")


class ConfirmWithdrawalForm(FlaskForm):
    """`code` is asked for (and checked by the view) only of users with two-factor sign-in on."""

    code = CodeField()
    submit = SubmitField("Confirm withdrawal")

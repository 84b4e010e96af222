"""The withdrawal form and its confirmation."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import SelectChoice, SubmitField
from wtforms.validators import InputRequired, Optional, ValidationError

from portal.money.rules.currencies import WITHDRAWAL_WALLETS
from portal.web.fields import AddressField, AmountField, CodeField, CurrencyField


class WalletField(CurrencyField):
    """The wallet a withdrawal leaves from: a crypto currency, never a fiat one."""

    def __init__(self, label: str, **kwargs: object) -> None:
        super().__init__(label, **kwargs)
        self.choices = [SelectChoice("", "Choose a wallet")]
        self.choices += [SelectChoice(code, code) for code in WITHDRAWAL_WALLETS]

    def pre_validate(self, form: FlaskForm) -> None:
        super().pre_validate(form)
        if self.data not in WITHDRAWAL_WALLETS:
            *others, last = WITHDRAWAL_WALLETS
            raise ValidationError(
                f"A withdrawal goes to a blockchain address, so it cannot leave the {self.data} "
                f"wallet: choose {', '.join(others)} or {last}."
            )


class WithdrawalForm(FlaskForm):
    amount = AmountField("Amount", validators=[InputRequired("Enter the amount to withdraw.")])
    wallet = WalletField("Wallet")
    address = AddressField("Address", "wallet", "Enter the destination address.")
    submit = SubmitField("Review")


class ConfirmWithdrawalForm(FlaskForm):
    """`code` is asked for (and checked by the view) only of users with two-factor sign-in on."""

    code = CodeField()
    submit = SubmitField("Confirm withdrawal")


class WithdrawalLimitForm(FlaskForm):
    """A currency's own limits, in its units, in place of those in the reporting currency; empty
    clears one. An owner with two-factor on confirms it with a fresh code: a stolen session
    must not lift it."""

    wallet = WalletField("Currency")
    per_withdrawal = AmountField("Limit per withdrawal", validators=[Optional()])
    daily_limit = AmountField("Daily limit", validators=[Optional()])
    code = CodeField()
    save_limit = SubmitField("Save limit")


class ReportingLimitsForm(FlaskForm):
    """The limits in the reporting currency, for every currency without limits of its own;
    above them money waits for another owner's approval. Empty: no limit."""

    per_withdrawal = AmountField("Limit per withdrawal", validators=[Optional()])
    per_day = AmountField("Limit per day (UTC)", validators=[Optional()])
    code = CodeField()
    save_limits = SubmitField("Save limits")

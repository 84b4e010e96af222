"""The deal that exchanges and cross exchanges share: a pair of currencies and one amount."""

from __future__ import annotations

from decimal import Decimal
from typing import TypedDict

from flask_wtf import FlaskForm
from wtforms.validators import Optional

from portal.web.fields import AmountField, CurrencyField


class ExchangeAmounts(TypedDict):
    """The pair and the one amount of an exchange, as the client's keyword arguments."""

    sell_currency: str
    buy_currency: str
    sell_amount: Decimal | None
    buy_amount: Decimal | None


class DealForm(FlaskForm):
    """Sell one currency for another; exactly one of the two amounts fixes the deal."""

    sell_currency = CurrencyField("Sell currency")
    buy_currency = CurrencyField("Buy currency")
    sell_amount = AmountField("Sell amount", validators=[Optional()])
    buy_amount = AmountField("Buy amount", validators=[Optional()])

    def validate(self, extra_validators: dict | None = None) -> bool:
        valid = super().validate(extra_validators)
        sell, buy = self.sell_currency.data, self.buy_currency.data
        if sell and sell == buy and not self.buy_currency.errors:
            self.buy_currency.errors.append("Choose a currency other than the one you sell.")
            valid = False
        if self.sell_amount.errors or self.buy_amount.errors:
            return False
        if self.sell_amount.data is None and self.buy_amount.data is None:
            self.sell_amount.errors.append("Enter the sell amount or the buy amount.")
            valid = False
        elif self.sell_amount.data is not None and self.buy_amount.data is not None:
            self.buy_amount.errors.append(
                "Enter only one of the two amounts: leave the buy amount empty, or the sell amount."
            )
            valid = False
        return valid

    def quotable(self) -> bool:
        """A pair and an amount with no mistake (the form's key aside): enough for a quote."""
        deal = (self.sell_currency, self.buy_currency, self.sell_amount, self.buy_amount)
        return bool(self.sell_currency.data and self.buy_currency.data) and not any(
            field.errors for field in deal
        )

    def amounts(self) -> ExchangeAmounts:
        """The pair and the one amount, as the client's keyword arguments."""
        return {
            "sell_currency": self.sell_currency.data,
            "buy_currency": self.buy_currency.data,
            "sell_amount": self.sell_amount.data,
            "buy_amount": self.buy_amount.data,
        }

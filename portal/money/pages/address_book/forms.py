"""Adding an address to the book, removing one, approving one early."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import StringField, SubmitField
from wtforms.validators import InputRequired, Length, NumberRange

from portal.money.pages.withdrawals.forms import WalletField
from portal.web.fields import AddressField, AmountField, CodeField, strip


class AddAddressForm(FlaskForm):
    currency = WalletField("Currency")
    address = AddressField("Address", "currency", "Enter the address.")
    name = StringField(
        "Name",
        validators=[
            InputRequired("Give the address a name, such as Cold wallet."),
            Length(max=120),
        ],
        filters=[strip],
    )
    submit = SubmitField("Add address")


class RemoveAddressForm(FlaskForm):
    submit = SubmitField("Remove")


class ApproveAddressForm(FlaskForm):
    """Ending the cooling-off lets money go to the address at once: a fresh second factor."""

    code = CodeField()
    submit = SubmitField("Approve now")


class CoolingOffForm(FlaskForm):
    """How long a new address waits; a shorter wait needs another owner (or 48 hours)."""

    hours = AmountField(
        "Cooling-off of new addresses, in hours",
        zero=True,
        validators=[
            InputRequired("Enter the hours, 0 for none."),
            NumberRange(max=8760, message="Enter at most 8760 hours (a year)."),
        ],
    )
    code = CodeField()
    save_cooling_off = SubmitField("Save cooling-off")

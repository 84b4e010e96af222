"""Adding an address to the book, removing one, approving one early."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import StringField, SubmitField
from wtforms.validators import InputRequired, Length

from portal.money.pages.withdrawals.forms import WalletField
from portal.web.fields import AddressField, CodeField, strip


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

"""The refund form and the actions of a refund's page."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import RadioField, SelectChoice, StringField, SubmitField
from wtforms.validators import Length, Optional

from portal.money.rules.refunds import Basis
from portal.web.fields import AmountField, CodeField, EmailAddressField, strip


class RefundForm(FlaskForm):
    """How much goes back (the surplus, an amount in the currency paid, one in the operation's
    own currency at its rate, or one in the reporting currency at today's rate), and to whom:
    a claim link, mailed when an e-mail is given, or an address typed here."""

    basis = RadioField(
        "Refund",
        choices=[
            SelectChoice(Basis.SURPLUS.value, "The surplus only"),
            SelectChoice(Basis.AMOUNT.value, "An amount in the currency paid"),
            SelectChoice(
                Basis.PRICED.value, "An amount in the operation's currency, at the rate when paid"
            ),
            SelectChoice(Basis.NOW.value, "An amount in the reporting currency, at today's rate"),
        ],
        default=Basis.SURPLUS.value,
    )
    amount = AmountField("Amount", validators=[Optional()])
    email = EmailAddressField("Customer's email", optional=True)
    address = StringField(
        "Address (leave empty to send a claim link)",
        validators=[Optional(), Length(max=255)],
        filters=[strip],
    )
    code = CodeField()
    submit = SubmitField("Request refund")


class CancelRefundForm(FlaskForm):
    submit = SubmitField("Cancel refund")


class RevealLinkForm(FlaskForm):
    """Whoever has the claim link can have the refund sent to an address of their own: a
    fresh second factor first, for a user who has one, as for a voucher's code."""

    code = CodeField()
    submit = SubmitField("Show claim link")


class NewLinkForm(FlaskForm):
    submit = SubmitField("Send link again")

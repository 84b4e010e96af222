"""The customer's address, typed twice."""

from __future__ import annotations

from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm
from wtforms import StringField, SubmitField
from wtforms.validators import EqualTo, InputRequired, Length

from portal.web.fields import strip


class ClaimForm(FlaskForm):
    address = StringField(
        _l("Your address"),
        validators=[InputRequired(_l("Enter your address.")), Length(max=255)],
        filters=[strip],
    )
    address_again = StringField(
        _l("Your address again"),
        validators=[EqualTo("address", _l("The two addresses differ: type the same one twice."))],
        filters=[strip],
    )
    submit = SubmitField(_l("Send my refund to this address"))

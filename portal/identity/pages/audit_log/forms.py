"""The audit log's filters, kept in the query string."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import DateField, SelectChoice, SelectField, SubmitField
from wtforms.validators import Optional, ValidationError

from portal.identity.rules.audit import ACTIONS


class AuditFilterForm(FlaskForm):
    class Meta:
        csrf = False

    user = SelectField("User", choices=[SelectChoice("", "Anyone")], default="")
    action = SelectField(
        "Action",
        choices=[SelectChoice("", "Any action")]
        + [SelectChoice(name, label) for name, label in ACTIONS.items()],
        default="",
    )
    date_from = DateField("From", validators=[Optional()])
    date_to = DateField("To", validators=[Optional()])
    submit = SubmitField("Filter")

    def validate_date_to(self, field: DateField) -> None:
        if field.data and self.date_from.data and field.data < self.date_from.data:
            raise ValidationError("Choose a day on or after the first day.")

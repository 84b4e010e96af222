"""The transactions list's filters: every one the API documents (docs/sandbox.md)."""

from __future__ import annotations

from typing import ClassVar

from wtforms import SelectChoice, SelectField, StringField
from wtforms.validators import Length, Optional

from portal.api import TRANSACTION_STATUSES
from portal.web.filters import ID_PATTERN, ListField, ListFilters, bounds, status_field


def _linked(value: object) -> bool | None:
    """`1`/`0` of the query string as True/False, empty (any) as None; else ValueError."""
    if value is None or isinstance(value, bool):
        return value
    choices = {"": None, "1": True, "0": False}
    if value not in choices:
        raise ValueError("linked is 1, 0 or empty")
    return choices[value]


class TransactionFilters(ListFilters):
    """Every filter and sort of the transactions list."""

    SORTS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("id", "Id"),
        ("operation", "Operation"),
        ("amount", "Amount"),
        ("linked", "Linked"),
        ("reject_reason", "Reject reason"),
        ("created_at", "Created"),
        ("updated_at", "Updated"),
    )

    id = ListField("Id", item=ID_PATTERN, item_message="Ids are letters and digits.")
    operation_id = ListField(
        "Operation", item=ID_PATTERN, item_message="Ids are letters and digits."
    )
    tx_id = StringField("Blockchain transaction id", validators=[Optional(), Length(max=255)])
    status = status_field(TRANSACTION_STATUSES)
    amount_from, amount_to = bounds("Amount", "amount")
    linked = SelectField(
        "Linked",
        choices=[
            SelectChoice("", "Any"),
            SelectChoice("1", "Linked by hand"),
            SelectChoice("0", "Not linked"),
        ],
        coerce=_linked,
        default=None,
    )
    reject_reason = StringField("Reject reason", validators=[Optional(), Length(max=255)])

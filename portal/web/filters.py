"""The filter forms of list pages: a GET form turned into validated API filters.

`read_filters(form_class, args)` is the one conversion from a query string to the keyword
arguments of the client's list methods (`list_operations(**filters)`); the list pages and the
CSV exports use it, so a filter means the same everywhere. Nothing invalid reaches the API: a
form with errors gives no filters at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar

from flask import url_for
from werkzeug.datastructures import MultiDict
from wtforms import (
    DateField,
    Form,
    IntegerField,
    SelectChoice,
    SelectField,
    SelectMultipleField,
    StringField,
)
from wtforms.validators import Optional, ValidationError
from wtforms.widgets import CheckboxInput, ListWidget

PER_PAGE_CHOICES = (10, 25, 50, 100)
DEFAULT_PER_PAGE = 50
MAX_PAGE = 2_147_483_647
MAX_BOUND_LENGTH = 100
# Ids are strings in the API: letters, digits and a few separators, never a comma.
ID_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,64}")
CURRENCY_PATTERN = re.compile(r"[A-Z0-9]{2,10}")
BOUND_PATTERN = re.compile(r"-?\d+(\.\d+)?")


class ListField(StringField):
    """A comma-separated list typed in one box; `data` is the list of non-empty items."""

    def __init__(
        self,
        label: str,
        item: re.Pattern[str] | None = None,
        item_message: str = "",
        upper: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(label, **kwargs)
        self.item = item
        self.item_message = item_message
        self.upper = upper

    def process_formdata(self, valuelist: list[str]) -> None:
        text = ",".join(valuelist)
        items = [part.strip() for part in text.split(",")]
        self.data = [item.upper() if self.upper else item for item in items if item]

    def _value(self) -> str:
        return ", ".join(self.data or [])

    def pre_validate(self, form: Form) -> None:
        if len(self.data or []) > 100:
            raise ValidationError("Enter at most 100 values.")
        for item in self.data or []:
            if len(item) > 255 or (self.item and not self.item.fullmatch(item)):
                raise ValidationError(f"{item[:40]!r} is not valid. {self.item_message}".strip())


class BoundField(StringField):
    """A lower or upper bound on an amount: an exact decimal (never a float), may be negative."""

    def process_formdata(self, valuelist: list[str]) -> None:
        self.raw = valuelist[0].strip() if valuelist else ""
        self.data = None
        if self.raw and len(self.raw) <= MAX_BOUND_LENGTH and BOUND_PATTERN.fullmatch(self.raw):
            try:
                self.data = Decimal(self.raw)
            except InvalidOperation:
                self.data = None

    def _value(self) -> str:
        return getattr(self, "raw", "") or ("" if self.data is None else format(self.data, "f"))

    def pre_validate(self, form: Form) -> None:
        if getattr(self, "raw", "") and self.data is None:
            raise ValidationError("Enter a number such as 10 or 0.5.")


class CheckboxesField(SelectMultipleField):
    """A multi-select shown as a group of checkboxes."""

    widget = ListWidget(prefix_label=False)
    option_widget = CheckboxInput()

    def pre_validate(self, form: Form) -> None:
        known = {choice.value for choice in self.choices}
        if any(value not in known for value in self.data or []):
            raise ValidationError("Choose from the values shown.")


def status_field(statuses: Mapping[int, str]) -> CheckboxesField:
    """The **Status** filter: readable names, sent to the API as their numeric codes."""
    return CheckboxesField(
        "Status",
        choices=[SelectChoice(code, text.capitalize()) for code, text in statuses.items()],
        coerce=int,
    )


def _not_after(other: str, message: str) -> Callable[[Form, Any], None]:
    """The field's value must not exceed the one of the field named `other` (its pair)."""

    def check(form: Form, field: Any) -> None:
        low = form[other].data
        if low is not None and field.data is not None and low > field.data:
            raise ValidationError(message)

    return check


def bounds(label: str, name: str) -> tuple[BoundField, BoundField]:
    """`<name>_from` and `<name>_to`, with the check that they are in order."""
    return (
        BoundField(f"{label} from"),
        BoundField(
            f"{label} to",
            validators=[_not_after(f"{name}_from", f"Must be at least “{label} from”.")],
        ),
    )


def _page_number(_form: Form, field: IntegerField) -> None:
    """1 to MAX_PAGE (WTForms' NumberRange fails on an integer too large for a float)."""
    if field.data is not None and not 1 <= field.data <= MAX_PAGE:
        raise ValidationError(f"Enter a page number from 1 to {MAX_PAGE}.")


@dataclass(frozen=True)
class Chip:
    """A filter set on a list, in words, and the list's address without it."""

    label: str
    value: str
    remove_url: str


class ListFilters(Form):
    """The fields every list has; subclasses add their filters and their SORTS."""

    SORTS: ClassVar[tuple[tuple[str, str], ...]] = ()

    created_from = DateField(
        "Created from", validators=[Optional()], render_kw={"placeholder": "YYYY-MM-DD"}
    )
    created_to = DateField(
        "Created to",
        validators=[
            Optional(),
            _not_after("created_from", "Must be on or after “Created from”."),
        ],
        render_kw={"placeholder": "YYYY-MM-DD"},
    )
    sort = SelectField("Sort by", choices=[], default="")
    sort_type = SelectField(
        "Direction",
        choices=[
            SelectChoice("", "Default"),
            SelectChoice("asc", "Ascending"),
            SelectChoice("desc", "Descending"),
        ],
        default="",
    )
    per_page = SelectField(
        "Per page",
        choices=[SelectChoice(n, str(n)) for n in PER_PAGE_CHOICES],
        coerce=int,
        default=DEFAULT_PER_PAGE,
    )
    page = IntegerField("Page", validators=[Optional(), _page_number], default=1)

    def __init__(self, formdata: MultiDict | None = None, **kwargs: Any) -> None:
        super().__init__(formdata, **kwargs)
        self.sort.choices = [
            SelectChoice("", "Newest first"),
            *(SelectChoice(value, label) for value, label in self.SORTS),
        ]

    def validate(self, extra_validators: Mapping | None = None) -> bool:
        """Validate, with messages that say what to enter instead of WTForms' generic ones."""
        valid = super().validate(extra_validators)
        for field in self:
            if not field.errors:
                continue
            if isinstance(field, DateField) and field.data is None:
                field.errors[:] = ["Enter a date as YYYY-MM-DD."]
            elif field is self.per_page:
                field.errors[:] = ["Choose 10, 25, 50 or 100."]
            elif field is self.page:
                field.errors[:] = ["Enter a page number of at least 1."]
            elif isinstance(field, SelectField | SelectMultipleField):
                field.errors[:] = ["Choose from the values shown."]
        return valid

    def api_filters(self) -> dict[str, object]:
        """The keyword arguments of the client's list method (empty filters left out)."""
        filters: dict[str, object] = {}
        for field in self:
            value = field.data
            if value is None or value == "" or value == []:
                continue
            filters[field.name] = value
        return filters

    def chips(self, endpoint: str) -> list[Chip]:
        """Each filter set, as a chip that links to the list without it (at its first page)."""
        chosen = self.query_args(page=None, per_page=None, sort=None, sort_type=None)
        found = []
        for name, value in chosen.items():
            field = self[name]
            words = {}
            if isinstance(field, SelectField | SelectMultipleField):
                words = {str(choice[0]): str(choice[1]) for choice in field.iter_choices()}
            values = value if isinstance(value, list) else [value]
            shown = ", ".join(words.get(str(item), str(item)) for item in values)
            without = url_for(endpoint, **self.query_args(page=None, **{name: None}))
            found.append(Chip(field.label.text, shown, without))
        return found

    def query_args(self, **changes: Any) -> dict[str, Any]:
        """The query string as entered, without empty values and defaults, plus `changes`.

        For links and the URL pushed to the address bar: the values stay as the person typed
        them, so that a reload shows the same list, or the same error.
        """
        values: dict[str, Any] = {}
        for field in self:
            raw = [value for value in field.raw_data or [] if value != ""]
            if isinstance(field, SelectMultipleField):
                if raw:
                    values[field.name] = raw
            elif raw and raw[0] != str(field.default):
                values[field.name] = raw[0]
        values.update(changes)
        return {name: value for name, value in values.items() if value not in (None, "", [])}

    def sort_link(self, column: str) -> tuple[dict[str, object], str | None]:
        """URL parameters that sort by `column` (again: the other way), and the current order.

        The order is "ascending"/"descending" when the list is sorted by that column.
        """
        current = None
        if self.sort.data == column:
            current = "descending" if self.sort_type.data == "desc" else "ascending"
        direction = "desc" if current == "ascending" else "asc"
        return self.query_args(sort=column, sort_type=direction, page=None), current


@dataclass
class ListQuery:
    """A filter form read from a query string; `filters` is None when the form has errors."""

    form: ListFilters
    filters: dict[str, object] | None


def read_filters(form_class: type[ListFilters], args: MultiDict) -> ListQuery:
    """Validate the query string of a list page; the API filters only when every field is valid."""
    form = form_class(args)
    return ListQuery(form, form.api_filters() if form.validate() else None)

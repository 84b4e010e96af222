"""Every text the mirror copies from an API record fits its column: the client refuses a longer
one as a malformed answer (`MaxLength`), so no insert fails on a value the API sent."""

from __future__ import annotations

import types
import typing

import pytest
import sqlalchemy as sa

from portal.api import Operation, Transaction
from portal.api.records import MaxLength
from portal.live.models import Event
from portal.live.rules.mirror import OPERATION_COLUMNS, TRANSACTION_COLUMNS
from portal.payments.models import MirroredOperation, MirroredTransaction

COPIED = [
    (Operation, MirroredOperation, (*OPERATION_COLUMNS, "id")),
    (Transaction, MirroredTransaction, (*TRANSACTION_COLUMNS, "id")),
]
# A record's id lands in a column of another name, and in the events table.
RENAMED = {"id": {Operation: "operation_id", Transaction: "transaction_id"}}


def limit_of(record: type, name: str) -> int | None:
    hint = typing.get_type_hints(record, include_extras=True)[name]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        (hint,) = (arg for arg in typing.get_args(hint) if arg is not type(None))
    marks = getattr(hint, "__metadata__", ())
    return next((mark.characters for mark in marks if isinstance(mark, MaxLength)), None)


@pytest.mark.parametrize(("record", "model", "names"), COPIED)
def test_each_copied_text_is_limited_to_its_column(record, model, names):
    for name in names:
        column = model.__table__.c[RENAMED.get(name, {}).get(record, name)]
        if isinstance(column.type, sa.String) and not isinstance(column.type, sa.Text):
            limit = limit_of(record, name)
            assert limit is not None, f"{record.__name__}.{name} has no MaxLength"
            assert limit <= column.type.length, f"{record.__name__}.{name}"
    for name in ("operation_id", "transaction_id"):
        assert limit_of(record, "id") <= Event.__table__.c[name].type.length

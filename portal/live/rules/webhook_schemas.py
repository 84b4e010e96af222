"""The JSON Schema of each webhook type's body, and an example body of each.

`data` is the API's record as the mirror keeps it (`mirror.wire_record`), so its schema is read
from the record's own fields (portal/api/records.py): a field the records gain is in the schema
at once, and a shop validating with `additionalProperties: false` is never sent a key the
schema does not name. The settings page shows each type's example, docs/webhooks.md the
catalogue; the tests validate every body the suite delivers.
"""

from __future__ import annotations

import types
import typing
from dataclasses import MISSING, fields, is_dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from portal.api.records import MaxLength, Operation, Transaction
from portal.live.rules.events import PORTAL, PORTAL_FIELDS, EventType
from portal.payments.rules.operation_money import State

DIALECT = "https://json-schema.org/draft/2020-12/schema"
TEST_TYPE = "test"
DECIMAL = {"type": "string", "pattern": r"^-?\d+(\.\d+)?$"}
MOMENT = {"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"}
NULL = {"type": "null"}
# What the portal read of an operation's money (docs/webhooks.md, "The `portal` object").
MONEY = {
    "type": "object",
    "properties": {
        "state": {"anyOf": [{"enum": [state.value for state in State]}, NULL]},
        **{name: {"anyOf": [DECIMAL, NULL]} for name in PORTAL_FIELDS if name != "state"},
    },
    "required": list(PORTAL_FIELDS),
    "additionalProperties": False,
}
TEST_DATA = {
    "type": "object",
    "properties": {"message": {"type": "string"}, "sent_at": MOMENT},
    "required": ["message", "sent_at"],
    "additionalProperties": False,
}


def _value(hint: Any) -> dict[str, Any]:
    """The schema of one field's value, from its type as the records declare it."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        schema = _value(arguments[0])
        lengths = [meta.characters for meta in arguments[1:] if isinstance(meta, MaxLength)]
        return schema | {"maxLength": lengths[0]} if lengths else schema
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_value(argument) for argument in arguments]}
    if origin is tuple:
        return {"type": "array", "items": _value(arguments[0])}
    if isinstance(hint, type) and is_dataclass(hint):
        return record_schema(hint)
    simple = {
        type(None): NULL,
        Decimal: DECIMAL,
        datetime: MOMENT,
        bool: {"type": "boolean"},
        int: {"type": "integer"},
        str: {"type": "string"},
    }
    return simple[hint]


def record_schema(record: type) -> dict[str, Any]:
    """An API record in its JSON shape: every field it has, those without a default required."""
    hints = typing.get_type_hints(record, include_extras=True)
    declared = fields(record)
    return {
        "type": "object",
        "properties": {spec.name: _value(hints[spec.name]) for spec in declared},
        "required": [
            spec.name
            for spec in declared
            if spec.default is MISSING and spec.default_factory is MISSING
        ],
        "additionalProperties": False,
    }


def types_described() -> list[str]:
    """Every type a shop may receive, the test event last."""
    return [type_.value for type_ in EventType] + [TEST_TYPE]


def schema(type_: str) -> dict[str, Any]:
    """The whole body of a `type_` webhook."""
    if type_.startswith("operation."):
        data = record_schema(Operation)
    elif type_.startswith("transaction."):
        data = record_schema(Transaction)
    else:
        data = TEST_DATA
    properties: dict[str, Any] = {
        "id": {"type": "string", "pattern": "^evt_[0-9a-f]{24}$"},
        "type": {"const": type_},
        "created_at": MOMENT,
        "data": data,
    }
    if type_.startswith("operation."):
        properties[PORTAL] = MONEY
    return {
        "$schema": DIALECT,
        "title": type_,
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


EXAMPLE_TRANSACTION = {
    "id": "tx-5521",
    "tx_id": "9f2c4b0e7d1a5c3e8b6f0a4d2c7e1b5a3f9d8c6e4b2a0f1e3d5c7b9a8f6e4d2c",
    "amount": "0.01500000",
    "status": "confirmed",
    "linked": False,
    "reject_reason": None,
    "created_at": "2026-11-24T06:04:58.000000Z",
    "updated_at": "2026-11-24T06:05:12.000000Z",
}
EXAMPLE_OPERATION = {
    "id": "op-8812",
    "category": "application",
    "amount": "0.01500000",
    "fee": "0.00007500",
    "rate": "1",
    "currency": "BTC",
    "currency_paid": "BTC",
    "status": "confirmed",
    "address": "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh",
    "created_at": "2026-11-24T06:00:00.000000Z",
    "updated_at": "2026-11-24T06:05:12.000000Z",
    "application_id": "app-17",
    "application_name": "Shop",
    "order_id": "order-1042",
    "amount_paid": "0.01500000",
    "payment_url": "https://pay.example.com/op-8812",
    "redirect_url": "https://shop.example.com/orders/1042",
    "transactions": [EXAMPLE_TRANSACTION],
}
EXAMPLE_MONEY = {
    "state": "paid",
    "due": "0.01500000",
    "received": "0.01500000",
    "awaiting": "0",
    "difference": "0",
}


def example(type_: str) -> dict[str, Any]:
    """An example body of a `type_` webhook, as the page shows it."""
    body: dict[str, Any] = {
        "id": "evt_6f1c0f0d2b8f4e6a9d1c2b3a",
        "type": type_,
        "created_at": "2026-11-24T06:05:14Z",
    }
    if type_.startswith("operation."):
        return body | {"data": EXAMPLE_OPERATION, PORTAL: EXAMPLE_MONEY}
    if type_.startswith("transaction."):
        return body | {"data": EXAMPLE_TRANSACTION | {"operation_id": "op-8812"}}
    return body | {
        "data": {"message": "A test event from the merchant portal.", "sent_at": body["created_at"]}
    }

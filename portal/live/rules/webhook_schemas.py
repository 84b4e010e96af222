"""The JSON Schema of each webhook type's body, and an example body of each.

`data` is the API's record as the mirror keeps it (`mirror.wire_record`), so its schema is read
from the record's own fields (portal/api/records.py): a field the records gain is in the schema
at once, and a shop validating with `additionalProperties: false` is never sent a key the
schema does not name. The settings page shows each type's example, docs/webhooks.md the
catalogue; the tests validate every body the suite delivers.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import MISSING, fields, is_dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from portal.api.records import MaxLength, Operation, Transaction
from portal.live.rules.events import PORTAL, PORTAL_FIELDS, REFUND_STATES, EventType
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
# A refund as `refund.*` events carry it (`money.rules.refunds.refund_record`): no token, no
# e-mail; the API gives no hash for a withdrawal.
REFUND_DATA = {
    "type": "object",
    "properties": {
        "operation_id": {"type": "string"},
        "number": {"type": "integer", "minimum": 1},
        "amount": DECIMAL,
        "currency": {"type": "string"},
        "address": {"anyOf": [{"type": "string"}, NULL]},
        "state": {"enum": list(REFUND_STATES)},
        "withdrawal_id": {"anyOf": [{"type": "string"}, NULL]},
        "sent_at": {"anyOf": [MOMENT, NULL]},
    },
    "required": [
        "operation_id",
        "number",
        "amount",
        "currency",
        "address",
        "state",
        "withdrawal_id",
        "sent_at",
    ],
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


# When each type is sent (docs/webhooks.md, "Types"), as the settings page describes it.
SENT_WHEN = {
    EventType.OPERATION_CREATED: "A new operation appeared.",
    EventType.OPERATION_PARTLY_PAID: "Money arrived for an operation, less than is due (again "
    "at each new amount).",
    EventType.OPERATION_PAID: "The whole amount arrived, not yet confirmed.",
    EventType.OPERATION_OVERPAID: "More than is due arrived, whatever the status (again at "
    "each new amount).",
    EventType.OPERATION_UNDERPAID: "The operation was confirmed with less than is due.",
    EventType.OPERATION_PAID_LATE: "Money reached an operation after it expired, was canceled "
    "or failed.",
    EventType.OPERATION_CONFIRMED: "The payment service confirmed the operation; ship only when "
    "portal.state is paid.",
    EventType.OPERATION_EXPIRED: "The operation expired (money may have arrived before).",
    EventType.OPERATION_CANCELED: "The operation was canceled.",
    EventType.OPERATION_FAILED: "The operation failed.",
    EventType.OPERATION_STATUS_CHANGED: "The operation moved to any other status.",
    EventType.TRANSACTION_RECEIVED: "A blockchain transaction arrived.",
    EventType.TRANSACTION_NEEDS_REVIEW: "A transaction arrived that nobody has linked or "
    "rejected yet.",
    EventType.TRANSACTION_LINKED: "A transaction was linked to an operation.",
    EventType.TRANSACTION_CONFIRMED: "A transaction was confirmed.",
    EventType.TRANSACTION_REJECTED: "A transaction was rejected.",
    EventType.REFUND_REQUESTED: "A refund was asked for: its claim link made, or an address typed.",
    EventType.REFUND_CLAIMED: "The customer gave the address on the claim link.",
    EventType.REFUND_SENT: "The refund's withdrawal was sent.",
    EventType.REFUND_REFUSED: "The payment service refused the refund's withdrawal.",
    EventType.REFUND_UNKNOWN: "The refund's withdrawal got no answer; it is never sent again.",
    EventType.REFUND_CANCELED: "The merchant canceled the refund.",
    EventType.REFUND_EXPIRED: "The claim link was not used in time.",
    TEST_TYPE: "Send test event, on this page.",
}


def types_described() -> list[str]:
    """Every type a shop may receive, the test event last."""
    return [type_.value for type_ in EventType] + [TEST_TYPE]


def schema_text(type_: str) -> str:
    """The schema as docs/webhook-schemas/<type>.json holds it."""
    return json.dumps(schema(type_), indent=2) + "\n"


def write_catalogue(folder: Path) -> None:
    """Write each type's schema into `folder` (docs/webhook-schemas: a test says when to)."""
    for type_ in types_described():
        (folder / f"{type_}.json").write_text(schema_text(type_))


def catalogue() -> list[tuple[str, str, str]]:
    """Each type, when it is sent, and an example body as indented JSON."""
    return [
        (type_, SENT_WHEN[type_], json.dumps(example(type_), indent=2))
        for type_ in types_described()
    ]


def schema(type_: str) -> dict[str, Any]:
    """The whole body of a `type_` webhook."""
    if type_.startswith("operation."):
        data = record_schema(Operation)
    elif type_.startswith("transaction."):
        data = record_schema(Transaction)
    elif type_.startswith("refund."):
        data = REFUND_DATA
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
EXAMPLE_REFUND = {
    "operation_id": "op-8812",
    "number": 1,
    "amount": "0.00500000",
    "currency": "BTC",
    "address": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
    "withdrawal_id": "wd-4410",
    "sent_at": "2026-11-25T09:12:40Z",
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
    if type_.startswith("refund."):
        return body | {"data": EXAMPLE_REFUND | {"state": type_.removeprefix("refund.")}}
    return body | {
        "data": {"message": "A test event from the merchant portal.", "sent_at": body["created_at"]}
    }

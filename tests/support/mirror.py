"""The mirror filled directly, as the sync would fill it: operations, events, its last sync.

For the pages that read the mirror (dashboard, timelines) without running the sync itself.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from datetime import UTC, datetime

from flask import Flask

from portal.api import Operation
from portal.live.rules.mirror import OPERATION_COLUMNS, SyncReport, wire_record
from tests.support.portal_app import MERCHANT

_keys = itertools.count()


def merchant_id(app: Flask, merchant: str = MERCHANT) -> int:
    from portal.extensions import db
    from portal.identity.rules import accounts

    with app.app_context():
        made = accounts.merchant_named(merchant, create=True)
        db.session.commit()
        return made.id


def mirror_operations(
    app: Flask,
    operations: Iterable[Operation],
    merchant: str = MERCHANT,
    synced_at: datetime | None = None,
) -> None:
    """Store `operations` as the mirror's copy of `merchant`'s, and a finished sync."""
    from portal.extensions import db
    from portal.payments.models import MirroredOperation
    from portal.payments.rules import search
    from portal.payments.rules.mirror_money import late_money
    from portal.payments.rules.operation_money import operation_money

    owner = merchant_id(app, merchant)
    rows = [
        {
            "merchant_id": owner,
            "operation_id": operation.id,
            **{name: getattr(operation, name) for name in OPERATION_COLUMNS},
            "record": wire_record(operation),
            "state": operation_money(operation).state,
            **late_money(operation),
        }
        for operation in operations
    ]
    with app.app_context():
        search.insert_searchable(MirroredOperation, rows)
        synced(owner, synced_at or datetime.now(UTC))
        db.session.commit()


def synced(owner: int, moment: datetime) -> None:
    """The mirror of merchant `owner` finished a sync at `moment` (in the caller's session)."""
    from portal.extensions import db
    from portal.live.models import MirrorState

    state = db.session.get(MirrorState, owner) or MirrorState(merchant_id=owner)
    state.last_sync_at = moment
    db.session.add(state)


def add_event(
    app: Flask,
    type_: str,
    record: object,
    *,
    operation_id: str,
    occurred_at: datetime,
    merchant: str = MERCHANT,
) -> None:
    """One event about `operation_id`, written by `portal.live.rules.events.record` as the sync
    does;
    `record` is the operation or transaction the event is about (a client record or JSON)."""
    from portal.extensions import db
    from portal.live.rules.events import EventType
    from portal.live.rules.events import record as write

    data = record if isinstance(record, dict) else wire_record(record)
    owner = merchant_id(app, merchant)
    with app.app_context():
        write(
            owner,
            EventType(type_),
            dedup_key=f"test:{next(_keys)}",
            data=data,
            occurred_at=occurred_at,
            operation_id=operation_id,
            transaction_id=data.get("id") if type_.startswith("transaction.") else None,
        )
        db.session.commit()


def sync_now(app: Flask, merchant: str = MERCHANT, *, full: bool = False) -> SyncReport:
    """Run the mirror's sync of `merchant` once, as the worker would (with `full`, the full
    resync an owner asks for); it must succeed. Its report."""
    from portal.identity.rules import accounts
    from portal.live.rules import mirror

    with app.app_context():
        merchant_id = accounts.merchant_named(merchant).id
        if full:
            mirror.request_full_resync(merchant_id)
        report = mirror.sync_merchant(merchant_id, force=True)
        assert report is not None and report.error is None, report
    return report

"""The mirror: each connected merchant's operations and transactions, copied from the API into
the portal's database, and every change the copy sees written once as an event.

A sync reads the lists newest change first (`sort=updated`, `sort_type=desc`) and stops at the
first record older than the last watermark minus `OVERLAP`: a record committed upstream a little
out of order is still read, and records read twice change nothing. A merchant's first sync, its
daily full resync and one an owner asks for read everything instead. The first sync writes the
past as events with `notify` false (timelines show it, nobody is told), except the changes of
operations an interrupted first sync mirrored before it (`_Sync._record`); a full resync's
differences are notified, since they are real changes the increments missed.

Only the worker holding a merchant's lease (one conditional UPDATE of its MirrorState) syncs it,
and every write checks the lease is still its own. The mirror only reads from the API: it never
moves money.

Each sync first records the rates (`portal.money.rules.rate_history`), then books in the ledger
what changed in the money of the operations it read and in the voucher list
(`portal.money.rules.ledger`), in the same transaction as the page that shows it.

The mirror belongs to the merchant's API connection: connecting to another account (a new base
URL, environment or token, `portal.settings.rules.connection.connect`) deletes the mirror and its
state,
and the next sync is a first one, of the new account, under the connection's new generation.

A sync that fails, in any way, is rolled back and recorded on its merchant (`last_error`, shown
on /settings/api); the tick goes on with the other merchants, and the failing one waits longer
after each failure (`retry_at`), its turn after the merchants whose syncs work.
"""

from __future__ import annotations

import enum
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Set
from dataclasses import dataclass, field, is_dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import partial
from typing import Any, TypeVar

import sqlalchemy as sa
from flask import current_app
from sqlalchemy.exc import IntegrityError

from portal import shutdown
from portal.api import (
    OPERATION_LIST,
    VOUCHER_LIST,
    ApiFailure,
    ListEndpoint,
    MerchantApiClient,
    Operation,
    Page,
    Transaction,
    Voucher,
)
from portal.api.paging import read_pages
from portal.api.records import with_fields
from portal.database import utcnow
from portal.extensions import db
from portal.identity.models import Merchant
from portal.identity.rules import accounts
from portal.live.models import Event, MirrorState
from portal.live.rules import events
from portal.live.rules.events import EventType
from portal.money.models import LedgerEntry
from portal.money.rules import ledger, rate_history
from portal.payments.models import MirroredOperation, MirroredTransaction
from portal.payments.rules import attention, search
from portal.payments.rules.mirror_money import (
    TRANSACTION_COLUMNS,
    mirrored_operations,
    money_columns,
    restate_row,
)
from portal.payments.rules.operation_money import ENDED_STATUSES, OperationMoney, State
from portal.payments.rules.state_words import EVENT_STATES
from portal.settings.models import ApiConnection
from portal.settings.rules.connection import api_client_for

log = logging.getLogger(__name__)
R = TypeVar("R", Operation, Transaction, Voucher)
A = TypeVar("A")

PER_PAGE = 100
# How far before the watermark an incremental sync still reads.
OVERLAP = timedelta(seconds=60)
# A lease outlives a worker that died by this much; a live worker renews it after every page.
LEASE = timedelta(minutes=3)
FULL_RESYNC_EVERY = timedelta(days=1)
# A tick that comes a little early still finds the merchant due.
TICK_SLACK = timedelta(milliseconds=500)
# Records looked up in the mirror with one query (SQLite allows 999 parameters per statement).
LOOKUP_CHUNK = 500
MAX_ERROR_LENGTH = 500
# The pause before a failed merchant is tried again doubles from the sync interval up to this.
MAX_RETRY_PAUSE = timedelta(minutes=15)

# The events of a status the API reports (its status changed to it) ...
OPERATION_STATUS_EVENTS = {
    state.value: type_
    for type_, state in EVENT_STATES.items()
    if state in (State.EXPIRED, State.CANCELED, State.FAILED)
} | {"confirmed": EventType.OPERATION_CONFIRMED}
# ... and of a state the money reached, whatever the status (`operation_money`). An operation
# confirmed already whose money becomes right (a top-up linked after an accepted underpayment)
# is `operation.confirmed` again, now `paid`.
MONEY_STATE_EVENTS: dict[State | None, EventType] = {
    state: type_
    for type_, state in EVENT_STATES.items()
    if state.value not in OPERATION_STATUS_EVENTS or state is State.PAID
}
# The mirror's columns copied from the API record of the same name.
OPERATION_COLUMNS = (
    "order_id",
    "category",
    "status",
    "amount",
    "amount_paid",
    "currency",
    "currency_paid",
    "address",
    "created_at",
    "updated_at",
)
# Transactions someone (or the service) decided on; any other status needs a person's review.
DECIDED_TRANSACTION_STATUSES = frozenset({"confirmed", "rejected"})


class SyncKind(enum.StrEnum):
    FIRST = "first"  # nothing mirrored yet: history, not notified
    FULL = "full"  # everything read again: differences notified
    INCREMENTAL = "incremental"


class LeaseLost(Exception):
    """Another worker took the merchant's lease (this one was too slow to renew it)."""


class Stopped(Exception):
    """The worker is shutting down: the pages written stay, the next sync reads the rest."""


@dataclass
class SyncReport:
    """What one sync of one merchant did, for the worker's log and the tests."""

    merchant_id: int
    kind: SyncKind
    requests: int = 0
    operations: int = 0  # records written (new or changed)
    transactions: int = 0
    events: int = 0
    seconds: float = 0.0
    error: str | None = None


def sync_due() -> list[SyncReport]:
    """Sync every connected merchant whose interval has passed (or whose full resync is due)
    and whose lease no other worker holds."""
    _create_missing_states()
    now = utcnow()
    # Read first, so an idle tick writes nothing; the claim checks again, in one UPDATE.
    # Merchants whose last sync worked first, the one synced longest ago first; then those
    # whose syncs fail, in the order their pauses end.
    due = db.session.scalars(
        sa.select(MirrorState.merchant_id)
        .join(ApiConnection, ApiConnection.merchant_id == MirrorState.merchant_id)
        .where(_due(now), _free(now))
        .order_by(MirrorState.retry_at.nulls_first(), MirrorState.last_sync_at.nulls_first())
    ).all()
    db.session.rollback()  # no transaction held open while syncing
    reports = []
    for merchant_id in due:
        if shutdown.requested():
            break
        try:
            report = sync_merchant(merchant_id)
        except Exception:  # even its failure could not be written: its lease runs out
            db.session.rollback()
            log.exception("merchant %s: the sync's failure could not be recorded", merchant_id)
            continue
        if report is not None:
            reports.append(report)
    return reports


def connected_merchant_ids() -> list[int]:
    """Every merchant with an API connection, each with its MirrorState made if missing."""
    _create_missing_states()
    return list(
        db.session.scalars(
            sa.select(MirrorState.merchant_id)
            .join(ApiConnection, ApiConnection.merchant_id == MirrorState.merchant_id)
            .order_by(MirrorState.merchant_id)
        )
    )


def request_full_resync(merchant_id: int) -> bool:
    """Have the next tick read everything of the merchant again (the button and the command);
    False when the merchant has no API connection to read from."""
    _create_missing_states(merchant_id)
    requested = db.session.execute(
        sa.update(MirrorState)
        .where(MirrorState.merchant_id == merchant_id)
        .values(full_sync_requested_at=utcnow(), retry_at=None)  # asked for: no pause
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    return requested.rowcount == 1  # type: ignore[attr-defined]


@dataclass(frozen=True)
class MirrorStatus:
    """What the API settings page shows of the mirror."""

    last_sync_at: datetime | None
    last_full_sync_at: datetime | None
    full_sync_requested_at: datetime | None
    last_error: str | None
    failures: int  # syncs failed in a row
    retry_at: datetime | None  # the next attempt after a failure
    operations: int


def status_of(merchant_id: int) -> MirrorStatus:
    state = db.session.get(MirrorState, merchant_id)
    count = db.session.scalar(
        sa.select(sa.func.count())
        .select_from(MirroredOperation)
        .where(MirroredOperation.merchant_id == merchant_id)
    )
    return MirrorStatus(
        last_sync_at=state.last_sync_at if state else None,
        last_full_sync_at=state.last_full_sync_at if state else None,
        full_sync_requested_at=state.full_sync_requested_at if state else None,
        last_error=state.last_error if state else None,
        failures=state.failures if state else 0,
        retry_at=state.retry_at if state else None,
        operations=count or 0,
    )


def sync_merchant(merchant_id: int, *, force: bool = False) -> SyncReport | None:
    """Sync one merchant if it is due (or `force`) and its lease is free; None otherwise.

    A failure of any kind (the API's, a record the database refuses, a bug) ends the sync with
    what it wrote so far rolled back to its last page, the watermarks where they were and the
    failure in `last_error`; the merchant is tried again after a pause (`_retry_at`).
    """
    _create_missing_states(merchant_id)
    owner = _lease_owner()
    started_at = utcnow()
    if not _claim(merchant_id, owner, started_at, force=force):
        return None
    state = db.session.get(MirrorState, merchant_id, populate_existing=True)
    assert state is not None  # the claim updated it
    kind = _kind_of(state, started_at)
    report = SyncReport(merchant_id, kind)
    clock = time.monotonic()
    generation = events.current_generation(merchant_id)
    merchant = db.session.get_one(Merchant, merchant_id)
    sync = _Sync(
        merchant_id,
        owner,
        report,
        generation,
        notify=kind is not SyncKind.FIRST,
    )
    try:
        client = api_client_for(merchant)
        _record_rates(client, merchant_id, generation, started_at)
        if kind is SyncKind.INCREMENTAL:
            sync.incremental(client, state.operations_watermark, state.transactions_watermark)
        else:
            sync.everything(client)
        _book_vouchers(sync, client, everything=kind is not SyncKind.INCREMENTAL)
    except ApiFailure as failure:
        db.session.rollback()
        report.error = _error_text(failure)
    except LeaseLost:
        db.session.rollback()
        log.warning("merchant %s: lease lost to another worker; sync abandoned", merchant_id)
        return None
    except Stopped:
        _finish(merchant_id, owner, {})
        log.info("merchant %s: %s sync stopped for shutdown", merchant_id, kind.value)
        return None
    except Exception as error:  # anything else: this merchant's failure, not the tick's
        db.session.rollback()
        log.exception("merchant %s: %s sync failed", merchant_id, kind.value)
        report.error = _internal_error_text(error)
    except BaseException:
        db.session.rollback()
        _finish(merchant_id, owner, {"last_error": "The sync stopped on an internal error."})
        raise
    report.seconds = time.monotonic() - clock
    _finish(merchant_id, owner, _outcome(state, sync, report, started_at))
    _log(report)
    return report


def _record_rates(
    client: MerchantApiClient, merchant_id: int, generation: int, now: datetime
) -> None:
    """Record the rates first, so that the money this sync books finds the rates of its moment.
    Rates the API does not give now leave the money it brings without a rate (or at the last
    rates recorded, while fresh); the operations are mirrored all the same."""
    try:
        rates = client.get_rates()
    except ApiFailure as failure:
        log.warning("merchant %s: rates not recorded: %s", merchant_id, _error_text(failure))
        return
    rate_history.record(merchant_id, generation, rates, now)
    db.session.commit()


def _book_vouchers(sync: _Sync, client: MerchantApiClient, *, everything: bool) -> None:
    """Book the vouchers' movements after the operations: when the API does not answer the
    voucher list, the operations are mirrored all the same, and the next sync reads the
    vouchers from where the ledger stopped."""
    try:
        sync.vouchers(client, everything=everything)
    except ApiFailure as failure:
        db.session.rollback()
        log.warning("merchant %s: vouchers not read: %s", sync.merchant_id, _error_text(failure))


def _refresh_statistics() -> None:
    """Make PostgreSQL's statistics of the tables each page looks up by id again. A first sync
    is a bulk load: until the statistics count the merchant's new rows, PostgreSQL plans those
    lookups as if the merchant had none, reads each through all of the merchant's rows instead
    of the unique index, and each page costs more than the last (at 10,000 operations 5.7 ms a
    lookup instead of 0.2). Autovacuum waits for a tenth of a table to change; PostgreSQL's
    documentation asks for ANALYZE after a bulk load. SQLite plans them on the unique index
    without statistics."""
    if db.session.get_bind().dialect.name != "postgresql":
        return
    for model in (MirroredOperation, MirroredTransaction, LedgerEntry):
        db.session.execute(sa.text(f"ANALYZE {model.__tablename__}"))
    db.session.commit()


def _kind_of(state: MirrorState, now: datetime) -> SyncKind:
    if state.operations_watermark is None:
        return SyncKind.FIRST
    daily_due = state.last_full_sync_at is None or state.last_full_sync_at <= now - (
        FULL_RESYNC_EVERY
    )
    if state.full_sync_requested_at is not None or daily_due:
        return SyncKind.FULL
    return SyncKind.INCREMENTAL


def _outcome(
    state: MirrorState, sync: _Sync, report: SyncReport, started_at: datetime
) -> dict[str, Any]:
    """The MirrorState columns a finished sync sets; after a failure the error and the pause."""
    if report.error is not None:
        return {
            "last_error": report.error,
            "failures": state.failures + 1,
            "retry_at": _retry_at(started_at, state.failures + 1),
        }
    values: dict[str, Any] = {
        "last_error": None,
        "failures": 0,
        "retry_at": None,
        "last_sync_at": started_at,
        "first_sync_at": sa.func.coalesce(MirrorState.first_sync_at, started_at),
        "operations_watermark": _later(state.operations_watermark, sync.operations_seen),
        "transactions_watermark": _later(state.transactions_watermark, sync.transactions_seen),
    }
    if report.kind is not SyncKind.INCREMENTAL:
        values["last_full_sync_at"] = started_at
        # A request made while this sync ran is for a later one.
        values["full_sync_requested_at"] = sa.case(
            (MirrorState.full_sync_requested_at <= started_at, None),
            else_=MirrorState.full_sync_requested_at,
        )
    if values["operations_watermark"] is None:  # an empty account: mirrored all the same
        values["operations_watermark"] = started_at
    # Counted once here rather than by the pages: the menu of each reads this figure.
    values["attention_count"] = attention.menu_count(state.merchant_id, synced=started_at)
    return values


def _retry_at(now: datetime, failures: int) -> datetime:
    """When a merchant whose last `failures` syncs failed may be tried again: the sync interval,
    doubled for each failure after the first, at most MAX_RETRY_PAUSE."""
    interval = timedelta(seconds=float(current_app.config["SYNC_SECONDS"]))
    return now + min(interval * 2 ** min(failures - 1, 16), MAX_RETRY_PAUSE)


def _later(watermark: datetime | None, seen: datetime | None) -> datetime | None:
    if watermark is None or seen is None:
        return seen or watermark
    return max(watermark, seen)


def _error_text(failure: ApiFailure) -> str:
    """The failure in words for owners; the client already masked any token in it."""
    return f"{type(failure).__name__}: {failure}"[:MAX_ERROR_LENGTH]


def _internal_error_text(error: Exception) -> str:
    """A failure that is not the API's, for owners: its kind, not its text (a database error's
    text may quote the records); the worker's log has the whole of it."""
    return (
        f"The sync stopped on an internal error ({type(error).__name__}); "
        "the worker's log has the details."
    )


def _log(report: SyncReport) -> None:
    outcome = f"failed ({report.error})" if report.error else "done"
    log.info(
        "merchant %s: %s sync %s in %.2f s: %d request(s), %d operation(s) and "
        "%d transaction(s) written, %d event(s)",
        report.merchant_id,
        report.kind.value,
        outcome,
        report.seconds,
        report.requests,
        report.operations,
        report.transactions,
        report.events,
    )


# --- The lease -------------------------------------------------------------------------------


def _lease_owner() -> str:
    """Names this claim: the machine and process for the logs, and random so no two claims
    (threads of one process included) share a name."""
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{secrets.token_hex(6)}"


def _create_missing_states(merchant_id: int | None = None) -> None:
    """A MirrorState for every connected merchant without one (or for this one); two workers
    may do this at the same moment, and the loser's insert changes nothing."""
    missing = sa.select(ApiConnection.merchant_id).where(
        ~sa.exists().where(MirrorState.merchant_id == ApiConnection.merchant_id)
    )
    if merchant_id is not None:
        missing = missing.where(ApiConnection.merchant_id == merchant_id)
    if db.session.scalar(sa.select(sa.exists(missing))):
        try:
            db.session.execute(sa.insert(MirrorState).from_select(["merchant_id"], missing))
            db.session.commit()
        except IntegrityError:
            db.session.rollback()


def _claim(merchant_id: int, owner: str, now: datetime, *, force: bool) -> bool:
    """Take the merchant's lease if it is free (or ran out) and a sync is due: one UPDATE, so
    of two workers that try at once exactly one gets it."""
    claimed = db.session.execute(
        sa.update(MirrorState)
        .where(
            MirrorState.merchant_id == merchant_id, _free(now), sa.true() if force else _due(now)
        )
        .values(lease_owner=owner, lease_until=now + LEASE)
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    return claimed.rowcount == 1  # type: ignore[attr-defined]


def _due(now: datetime) -> sa.ColumnElement[bool]:
    """A sync is due: the interval passed since the last one, or a full resync is; and a
    merchant whose last sync failed waited its pause."""
    interval = timedelta(seconds=float(current_app.config["SYNC_SECONDS"]))
    return sa.and_(
        sa.or_(
            MirrorState.last_sync_at.is_(None),
            MirrorState.last_sync_at <= now - interval + TICK_SLACK,
            MirrorState.full_sync_requested_at.is_not(None),
            MirrorState.last_full_sync_at.is_(None),
            MirrorState.last_full_sync_at <= now - FULL_RESYNC_EVERY,
        ),
        sa.or_(MirrorState.retry_at.is_(None), MirrorState.retry_at <= now + TICK_SLACK),
    )


def _free(now: datetime) -> sa.ColumnElement[bool]:
    """No worker holds the lease, or the one that did let it run out."""
    return sa.or_(MirrorState.lease_until.is_(None), MirrorState.lease_until < now)


def _mine(merchant_id: int, owner: str) -> sa.ColumnElement[bool]:
    return sa.and_(MirrorState.merchant_id == merchant_id, MirrorState.lease_owner == owner)


def _renew(merchant_id: int, owner: str) -> None:
    """Extend the lease, first in the transaction of the page to write: LeaseLost if it is no
    longer ours, and then that page is not written. Its row stays locked until the page is
    committed: a new connection (`connection.connect`) deletes the mirror after taking the
    same lock, so a page of the old account lands before that delete or not at all. The
    merchant's row is locked next, before any mirrored row (`accounts.lock_merchant`, which the
    ledger's booking takes too): a settings change that locks it first and then the mirrored
    rows (the payment tolerance restates them) waits for the page, or the page for it, and
    neither waits for the other's rows in the opposite order."""
    renewed = db.session.execute(
        sa.update(MirrorState)
        .where(_mine(merchant_id, owner))
        .values(lease_until=utcnow() + LEASE)
        .execution_options(synchronize_session=False)
    )
    if renewed.rowcount != 1:  # type: ignore[attr-defined]
        raise LeaseLost
    accounts.lock_merchant(merchant_id)


def _finish(merchant_id: int, owner: str, values: dict[str, Any]) -> None:
    """Write the sync's outcome and release the lease, if it is still ours."""
    db.session.execute(
        sa.update(MirrorState)
        .where(_mine(merchant_id, owner))
        .values(**values, lease_owner=None, lease_until=None)
        .execution_options(synchronize_session=False)
    )
    db.session.commit()


# --- Records in the API's JSON shape ---------------------------------------------------------


def wire_record(record: Any) -> dict[str, Any]:
    """A parsed API record back in the API's JSON shape: amounts as strings, times in ISO 8601
    with a `Z`. An embedded transaction has no `operation_id`, as in the API's answer."""
    # The class's own table of its fields: `dataclasses.fields` makes a tuple for every call.
    # Most values are text or missing, written as they are without a call (a first sync shapes
    # a few million values).
    shaped = {
        name: value if value is None or value.__class__ is str else _wire_value(value)
        for name in record.__dataclass_fields__
        for value in (getattr(record, name),)
    }
    if isinstance(record, Transaction) and record.operation_id is None:
        del shaped["operation_id"]
    return shaped


def _wire_value(value: object) -> object:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        utc = value.astimezone(UTC).replace(tzinfo=None)
        return f"{utc.isoformat(timespec='microseconds')}Z"  # twice as fast as strftime
    if isinstance(value, tuple):
        return [_wire_value(item) for item in value]
    if is_dataclass(value):
        return wire_record(value)
    return value


# --- One sync --------------------------------------------------------------------------------


@dataclass(order=True)
class _Change:
    """An event to write; sorted by when it happened, then by `rank` (a transaction arriving
    before the operation's paid status it caused)."""

    occurred_at: datetime
    rank: int
    type_: EventType = field(compare=False)
    dedup_key: str = field(compare=False)
    data: dict = field(compare=False)
    operation_id: str | None = field(compare=False)
    transaction_id: str | None = field(default=None, compare=False)
    # Of a record the mirror did not hold before this page: a change no event can hold yet
    # (the mirror's rows are only deleted with their connection's generation).
    unseen: bool = field(default=False, compare=False)


@dataclass
class _Sync:
    """The pages of one sync of one merchant, written to the mirror batch by batch."""

    merchant_id: int
    owner: str
    report: SyncReport
    generation: int  # of the merchant's connection this sync reads
    notify: bool
    operations_seen: datetime | None = None  # the newest `updated_at` read of each list
    transactions_seen: datetime | None = None
    # The merchant's payment tolerance, read as each page is written (`_write`).
    tolerance_percent: Decimal = Decimal(0)
    new_rows: dict[Any, list[dict[str, Any]]] = field(default_factory=dict)
    created: set[str] = field(default_factory=set)  # operations first mirrored by this sync
    # Of the page being written: operations whose amount paid changed, the money of each.
    repaid: set[str] = field(default_factory=set)
    moneys: dict[str, OperationMoney] = field(default_factory=dict)
    written: dict[str, Operation] = field(default_factory=dict)  # their records, as read
    counting: threading.Lock = field(default_factory=threading.Lock)  # paging's workers count

    def everything(self, client: MerchantApiClient) -> None:
        """Read every operation (its transactions come embedded), page after page, each page
        written and committed on its own so a long first sync keeps its progress; in a first
        sync, the database's statistics made again as the pages written double."""
        for written, page in enumerate(self._every_page(client, OPERATION_LIST), start=1):
            self._write(page.items, ())
            if not self.notify and written & (written - 1) == 0:  # 1, 2, 4, 8, … pages
                _refresh_statistics()

    def vouchers(self, client: MerchantApiClient, *, everything: bool) -> None:
        """Book what the vouchers moved (`ledger.book_vouchers`), from the voucher list newest
        change first. A full sync reads the whole list, a request per PER_PAGE vouchers, each
        page booked and committed on its own. An incremental sync reads back to the newest
        voucher movement booked (less the overlap): one request while the vouchers changed
        since then fit on a page (a voucher paid off elsewhere books nothing, so it is read
        again until a later movement is booked)."""
        if everything:
            for page in self._every_page(client, VOUCHER_LIST):
                self._book_vouchers(page.items)
            return
        since = ledger.vouchers_booked_until(self.merchant_id, self.generation)
        self._book_vouchers(self._changed(self._counted(client.list_vouchers), "updated", since))

    def _every_page(
        self, client: MerchantApiClient, endpoint: ListEndpoint[R]
    ) -> Iterator[Page[R]]:
        """Every page of the list, newest change first; Stopped after the page in use when the
        worker is shutting down."""
        pages = read_pages(
            self._counted(
                partial(
                    client.fetch_page, endpoint, sort="updated", sort_type="desc", per_page=PER_PAGE
                )
            )
        )
        for page in pages:
            yield page
            if shutdown.requested():
                raise Stopped

    def _book_vouchers(self, vouchers: Iterable[Voucher]) -> None:
        _renew(self.merchant_id, self.owner)
        ledger.book_vouchers(
            self.merchant_id,
            self.generation,
            _newest(vouchers).values(),
            self._seen_at(),
        )
        db.session.commit()

    def _seen_at(self) -> datetime | None:
        """The time of what this sync sees: now, or None for the history a first sync reads,
        booked at the API's times."""
        return utcnow() if self.notify else None

    def incremental(
        self,
        client: MerchantApiClient,
        operations_watermark: datetime | None,
        transactions_watermark: datetime | None,
    ) -> None:
        """Read both lists back to their watermarks (minus the overlap), then write all of it
        at once, oldest change first."""
        operations = self._changed(
            self._counted(client.list_operations), "updated", operations_watermark
        )
        transactions = self._changed(
            self._counted(client.list_transactions), "updated_at", transactions_watermark
        )
        self._write(operations, transactions)

    def _counted(self, request: Callable[..., A]) -> Callable[..., A]:
        """`request`, each call counted as one request to the API."""

        def counted(**filters: Any) -> A:
            with self.counting:
                self.report.requests += 1
            return request(**filters)

        return counted

    def _changed(
        self, list_page: Callable[..., Page[R]], sort: str, watermark: datetime | None
    ) -> list[R]:
        """The records changed since `watermark - OVERLAP`, newest first, page by page."""
        since = watermark - OVERLAP if watermark else None  # None: a list never seen a record
        records: list[R] = []
        number = 1
        while True:
            page = list_page(sort=sort, sort_type="desc", per_page=PER_PAGE, page=number)
            recent = [r for r in page.items if since is None or r.updated_at >= since]
            records.extend(recent)
            if len(recent) < len(page.items) or not page.has_next or not page.items:
                return records
            number += 1

    def _write(self, operations: Iterable[Operation], listed: Iterable[Transaction]) -> None:
        """Upsert the records, write their events oldest first, renew the lease, commit."""
        newest_operations = _newest(operations)
        transactions = _newest(
            [
                *(
                    _with_operation(transaction, operation.id)
                    for operation in newest_operations.values()
                    for transaction in operation.transactions
                ),
                *listed,
            ]
        )
        changes: list[_Change] = []
        _renew(self.merchant_id, self.owner)
        # Read under the merchant's lock: a change made since the sync began counts.
        self.tolerance_percent = db.session.scalars(
            sa.select(Merchant.payment_tolerance_percent).where(Merchant.id == self.merchant_id)
        ).one()
        # Nothing is flushed before the commit: a query per record or event would otherwise
        # first write every row still pending (a first sync's pages of a hundred operations).
        moneys: list[tuple[Operation, OperationMoney]] = []
        with db.session.no_autoflush:
            mirrored = self._mirrored(MirroredOperation, newest_operations)
            earlier = mirrored.keys() - self.created  # mirrored before this sync began
            mirrored_tx = self._mirrored(MirroredTransaction, transactions)
            for operation in newest_operations.values():
                changes += self._operation(operation, mirrored.get(operation.id))
            for transaction in transactions.values():
                changes += self._transaction(transaction, mirrored_tx.get(transaction.id))
            stated = self._state_new(
                [
                    operation
                    for operation in newest_operations.values()
                    if operation.id not in mirrored
                    and not any(t.id in mirrored_tx for t in operation.transactions)
                ],
                transactions.values(),
            )
            for operation, money, record in stated:
                changes += self._state_change(operation, money, record, known=None, unseen=True)
                moneys.append((operation, money))
            self._insert_new()
        db.session.flush()
        with db.session.no_autoflush:
            touched = set(newest_operations) | {
                t.operation_id for t in transactions.values() if t.operation_id
            }
            changes += self._restate(touched - {operation.id for operation, *_ in stated}, moneys)
            ledger.book_operations(self.merchant_id, self.generation, moneys, self._seen_at())
            self._add_money(changes)
            self._record(changes, earlier)
            self.moneys.clear()
            self.repaid.clear()
            self.written.clear()
            self._insert_new()
        db.session.commit()
        self.operations_seen = _later(
            self.operations_seen,
            max((o.updated_at for o in newest_operations.values()), default=None),
        )
        self.transactions_seen = _later(
            self.transactions_seen, max((t.updated_at for t in transactions.values()), default=None)
        )

    def _mirrored(self, model: Any, records: dict[str, Any]) -> dict[str, Any]:
        """The rows of the mirror for these API ids, by id."""
        column = model.operation_id if model is MirroredOperation else model.transaction_id
        return {getattr(row, column.key): row for row in self._chunked(model, column, records)}

    def _upsert(
        self, model: Any, row: Any, record: Any, shaped: dict, columns: tuple[str, ...], **key: str
    ) -> None:
        """Copy the record's `columns` and its JSON (`shaped`) into the mirror's row, or keep a
        new row for `_insert_new` (one statement per table and page instead of one per row)."""
        values = {name: getattr(record, name) for name in columns}
        values |= {"record": shaped, **key}
        if row is None:
            self.new_rows.setdefault(model, []).append({"merchant_id": self.merchant_id, **values})
            return
        for name, value in values.items():
            setattr(row, name, value)

    def _insert_new(self) -> None:
        # The tables' own INSERT, one executemany: the ORM's bulk insert would split the rows
        # into a statement per pattern of null columns.
        for model, rows in self.new_rows.items():
            if model in search.FTS_TABLES:
                search.insert_searchable(model, rows)
            elif rows:  # an empty list would insert one row of defaults
                db.session.execute(sa.insert(model.__table__), rows)
        self.new_rows.clear()

    def _record(self, changes: list[_Change], earlier: Set[str]) -> None:
        """Write each change not yet in the events table (`events.unrecorded`), oldest first,
        so their ids are in the order they happened; with the page's other rows, in one
        statement per table.

        A first sync tells nobody, except of the changes (their transactions' included) of
        operations mirrored before it began (`earlier`, by a first sync that failed or stopped
        after some pages and so left no watermark): the mirror held them whole, so what changed
        since happened after mirroring began. Judged by operation rather than by a watermark
        stored with the first page, which would make the retry a full sync that tells of every
        operation the interrupted one never reached."""
        candidates: dict[str, dict] = {}
        unseen = {change.dedup_key for change in changes if change.unseen}
        for change in sorted(changes):
            # The same change found twice in one page (a status and the state it brings): once.
            candidates.setdefault(
                change.dedup_key,
                {
                    "type": change.type_.value,
                    "operation_id": change.operation_id,
                    "transaction_id": change.transaction_id,
                    "dedup_key": change.dedup_key,
                    "data": change.data,
                    "notify": self.notify or change.operation_id in earlier,
                    "occurred_at": change.occurred_at,
                },
            )
        rows = events.unrecorded(
            self.merchant_id, self.generation, list(candidates.values()), unseen=unseen
        )
        self.new_rows.setdefault(Event, []).extend(rows)  # written by `_insert_new`
        self.report.events += len(rows)

    def _chunked(self, model: Any, column: Any, values: Iterable[str]) -> Iterator[Any]:
        """The merchant's rows of `model` whose `column` is one of `values`."""
        values = list(values)
        for start in range(0, len(values), LOOKUP_CHUNK):
            chunk = values[start : start + LOOKUP_CHUNK]
            yield from db.session.scalars(
                sa.select(model).where(model.merchant_id == self.merchant_id, column.in_(chunk))
            )

    def _operation(self, operation: Operation, row: MirroredOperation | None) -> list[_Change]:
        """Upsert the operation; the changes since the mirror's copy."""
        record = wire_record(operation)
        if row is not None and (operation.updated_at < row.updated_at or row.record == record):
            return []
        changes = []
        change = partial(_Change, data=record, operation_id=operation.id, unseen=row is None)
        key = f"operation:{operation.id}"
        if row is None:
            changes.append(
                change(operation.created_at, 0, EventType.OPERATION_CREATED, f"{key}:created")
            )
            old_status = "new"
            self.created.add(operation.id)
        else:
            old_status = row.status
            if row.amount_paid != operation.amount_paid:
                self.repaid.add(operation.id)
        if operation.status != old_status:
            type_ = OPERATION_STATUS_EVENTS.get(
                operation.status, EventType.OPERATION_STATUS_CHANGED
            )
            # Confirming an operation that had ended is late money (`_restate` says so), never
            # the "ship the goods" of `operation.confirmed`.
            ended = old_status in ENDED_STATUSES or (row is not None and row.ended_status)
            if not (type_ is EventType.OPERATION_CONFIRMED and ended):
                changes.append(
                    change(operation.updated_at, 3, type_, _operation_key(operation, type_))
                )
        self._upsert(
            MirroredOperation,
            row,
            operation,
            record,
            OPERATION_COLUMNS,
            operation_id=operation.id,
        )
        self.written[operation.id] = operation
        self.report.operations += 1
        return changes

    def _state_new(
        self, operations: list[Operation], transactions: Iterable[Transaction]
    ) -> list[tuple[Operation, OperationMoney, dict]]:
        """In a first sync, the money of operations new to the mirror whose transactions all
        come with them (none mirrored before): read from the page's records (`transactions`,
        the page's, are those the mirror will hold for them) and written with their new rows,
        instead of read back from the mirror once inserted (`_restate`); each with its money
        and its record."""
        if self.notify or not operations:
            return []
        new_rows = {row["operation_id"]: row for row in self.new_rows.get(MirroredOperation, ())}
        of_operation: dict[str | None, list[Transaction]] = {}
        for transaction in transactions:
            of_operation.setdefault(transaction.operation_id, []).append(transaction)
        stated = []
        for operation in operations:
            operation = with_fields(
                operation, transactions=tuple(of_operation.get(operation.id, ()))
            )
            ended_status = operation.status if operation.status in ENDED_STATUSES else None
            money, columns = money_columns(operation, ended_status, self.tolerance_percent)
            row = new_rows[operation.id]
            row.update(columns)
            stated.append((operation, money, row["record"]))
        return stated

    def _restate(
        self, operation_ids: Iterable[str], moneys: list[tuple[Operation, OperationMoney]]
    ) -> list[_Change]:
        """Read again what the money of these operations amounts to (`restate_row`, from each
        record and the mirror's transactions: a transaction can change without its operation's
        record), each added to `moneys` for the ledger (`ledger.book_operations`); a state the
        money newly reached, or reached again with another amount paid, becomes its event."""
        changes = []
        rows = list(self._chunked(MirroredOperation, MirroredOperation.operation_id, operation_ids))
        operations = mirrored_operations(self.merchant_id, rows, self.written)
        for row in rows:
            operation = operations.get(row.operation_id)
            if operation is None:  # kept as the API wrote it; no money to read
                continue
            known = row.state
            money = restate_row(row, operation, self.tolerance_percent)
            moneys.append((operation, money))
            changes += self._state_change(operation, money, row.record, known=known)
        return changes

    def _state_change(
        self,
        operation: Operation,
        money: OperationMoney,
        record: dict,
        *,
        known: str | None,
        unseen: bool = False,
    ) -> list[_Change]:
        """Keep the operation's money for its events (`_add_money`); the event of the state it
        reached (with the mirror's `record`), if that is news: another state than the mirror
        `known`, or the same with another amount paid. A row mirrored before states were kept
        (None) gets its state quietly."""
        self.moneys[operation.id] = money
        type_ = MONEY_STATE_EVENTS.get(money.state)
        first = known is not None or operation.id in self.created
        news = money.state != known or operation.id in self.repaid
        if type_ is None or not news or not first:
            return []
        # Reached with the last change of its money: a late payment after the expiry.
        moment = max([operation.updated_at, *(t.updated_at for t in operation.transactions)])
        return [
            _Change(
                moment,
                2,
                type_,
                _operation_key(operation, type_),
                record,
                operation.id,
                unseen=unseen,
            )
        ]

    def _add_money(self, changes: list[_Change]) -> None:
        """Each operation event's data with the portal's figures beside the record
        (`events.with_money`), read once per page (`_state_new`, `_restate`), whether the event is
        of a status or of a state. A new dict for each: the changes of one record share it."""
        for change in changes:
            if change.type_.startswith("operation."):
                money = self.moneys.get(change.operation_id or "")
                change.data = events.with_money(change.data, money)

    def _transaction(
        self, transaction: Transaction, row: MirroredTransaction | None
    ) -> list[_Change]:
        """Upsert the transaction; the changes since the mirror's copy."""
        record = wire_record(transaction)
        if row is not None and (transaction.updated_at < row.updated_at or row.record == record):
            return []
        change = partial(
            _Change,
            data=record,
            operation_id=transaction.operation_id,
            transaction_id=transaction.id,
            unseen=row is None,
        )
        key = f"transaction:{transaction.id}"
        changes = []
        if row is None:
            changes.append(
                change(transaction.created_at, 1, EventType.TRANSACTION_RECEIVED, f"{key}:received")
            )
            if transaction.status not in DECIDED_TRANSACTION_STATUSES:
                changes.append(
                    change(
                        transaction.created_at,
                        1,
                        EventType.TRANSACTION_NEEDS_REVIEW,
                        f"{key}:needs_review",
                    )
                )
            old_status, old_linked = None, False
        else:
            old_status, old_linked = row.status, row.linked
        if old_status is not None and transaction.status != old_status:
            type_ = {
                "confirmed": EventType.TRANSACTION_CONFIRMED,
                "rejected": EventType.TRANSACTION_REJECTED,
            }.get(transaction.status)
            if type_ is not None:
                changes.append(
                    change(transaction.updated_at, 1, type_, f"{key}:{transaction.status}")
                )
        elif old_status is None and transaction.status == "rejected":
            changes.append(
                change(transaction.updated_at, 1, EventType.TRANSACTION_REJECTED, f"{key}:rejected")
            )
        if transaction.linked and not old_linked:
            changes.append(
                change(transaction.updated_at, 1, EventType.TRANSACTION_LINKED, f"{key}:linked")
            )
        self._upsert(
            MirroredTransaction,
            row,
            transaction,
            record,
            TRANSACTION_COLUMNS,
            transaction_id=transaction.id,
        )
        self.report.transactions += 1
        return changes


def _operation_key(operation: Operation, type_: EventType) -> str:
    """The dedup key of an operation's status or state event. The amount paid and the record's
    `updated_at` are in it: a top-up after an accepted underpayment, or a confirmation after a
    reject, is news again, while the same change read twice is one event."""
    received = format(operation.amount_paid or Decimal(0), "f")
    changed = _wire_value(operation.updated_at)
    return f"operation:{operation.id}:{type_.value}:{operation.status}:{received}:{changed}"


def _newest(records: Iterable[R]) -> dict[str, R]:
    """One record per id: the one changed last (a list read while it changes repeats some)."""
    newest: dict[str, R] = {}
    for record in records:
        known = newest.get(record.id)
        if known is None or record.updated_at >= known.updated_at:
            newest[record.id] = record
    return newest


def _with_operation(transaction: Transaction, operation_id: str) -> Transaction:
    """An embedded transaction with the `operation_id` the transaction endpoints give it."""
    return with_fields(transaction, operation_id=operation_id)

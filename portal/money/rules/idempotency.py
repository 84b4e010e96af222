"""Exactly one upstream request per form that moves money, however often the form arrives.

The guarantee lives in the database, so it holds across threads and gunicorn workers: a request
may send only after it moved an intent from `pending` (or from nothing, for a form's fresh key)
to `sending`, in one statement that only one request can win. The request is never retried: an
answer that never came leaves the intent `unknown`, to be checked before trying again; a request
that surely never left goes back to `pending`, so the same form may be sent again.

Withdrawals keep their own table (`WithdrawalIntent`, reviewed on a page of their own), and so
do refunds (`Refund`, sent by the worker once the customer gave the address); the forms
of exchanges, vouchers, cross exchanges and new operations carry their key in the form itself
(`IdempotencyKey`). Both claim and settle through this module. Nothing here knows about pages.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from portal.api import ApiRefusal, ApiUnavailable
from portal.database import utcnow
from portal.extensions import db, rows_changed
from portal.identity.models import Merchant, User
from portal.money.models import (
    Approval,
    IdempotencyKey,
    IntentKind,
    IntentState,
    Refund,
    WithdrawalIntent,
)

KEY_BYTES = 24
PORTAL_FAILURE = "The portal failed while it kept the answer: check before sending again."
# A request's whole conversation ends within its deadline, seconds: one still `sending` this
# long after its claim was cut off by its process (a restart, a crash, a failed commit).
STRANDED_AFTER = timedelta(minutes=10)
# How far the clocks of the portal and the payment service may differ.
CLOCK_MARGIN = timedelta(minutes=1)


class UnderWay(Protocol):
    """A request kept with the moments it was claimed and last settled."""

    created_at: datetime
    updated_at: datetime


def while_under_way(request: UnderWay, moment: datetime) -> bool:
    """Whether something the payment service made at `moment` was made while `request` was
    under way: from when it was asked to when its answer came or was lost, a clock margin
    either side. What a lost answer may have made is looked for there."""
    return request.created_at - CLOCK_MARGIN <= moment <= request.updated_at + CLOCK_MARGIN


class Settled(Protocol):
    """What `settling` keeps on an intent: its state and, for a refusal, why."""

    state: IntentState
    error_code: int | None
    error_message: str | None


def new_key() -> str:
    """An unguessable idempotency key (32 url-safe characters)."""
    return secrets.token_urlsafe(KEY_BYTES)


def take_pending(
    model: type[IdempotencyKey] | type[WithdrawalIntent] | type[Refund],
    *criteria: sa.ColumnElement[bool],
    **values: object,
) -> bool:
    """Move the pending row of `model` that matches `criteria` to sending, within the caller's
    transaction; True only for the one caller whose statement changed it."""
    changed = rows_changed(
        sa.update(model)
        .where(*criteria, model.state == IntentState.PENDING)
        .values(state=IntentState.SENDING, updated_at=utcnow(), **values)
        .execution_options(synchronize_session=False)
    )
    return changed == 1


def strand(model: type[WithdrawalIntent] | type[IdempotencyKey] | type[Refund]) -> list[int]:
    """Move what has been `sending` for longer than any request takes to `unknown`, the
    outcome a person checks: left `sending`, it read "being sent" for good and nothing tied it
    to what it made. Never back to `pending`: its request may have left. The ids this call
    moved (read first, so that an idle pass writes nothing)."""
    stranded = list(
        db.session.scalars(
            sa.select(model.id).where(
                model.state == IntentState.SENDING,
                model.updated_at < utcnow() - STRANDED_AFTER,
            )
        )
    )
    if stranded:
        stranded = list(
            db.session.scalars(
                sa.update(model)
                .where(model.id.in_(stranded), model.state == IntentState.SENDING)
                # `updated_at` stays the claim's moment: the end of the time it was under way, which
                # ties a lost answer to what it made, and the day it counts on in the limits.
                .values(
                    state=IntentState.UNKNOWN,
                    error_message=PORTAL_FAILURE,
                    updated_at=model.updated_at,
                )
                .returning(model.id)
                .execution_options(synchronize_session=False)
            )
        )
        db.session.commit()
    return stranded


@contextmanager
def settling(intent: Settled) -> Iterator[None]:
    """Keep on a claimed intent how its one request ended, and commit it.

    An exception of the block goes on to the caller: a refusal is `refused` (with its code and the
    API's message), no answer after the request left is `unknown`, and a request that surely never
    left is `pending` again. Any other failure, the portal's own after the request may have left (an
    answer it cannot store, say), is `unknown` too: never sent again, and never left `sending`.
    """
    try:
        yield
    except ApiUnavailable as error:
        intent.state = IntentState.UNKNOWN if error.request_sent else IntentState.PENDING
        intent.error_message = error.message
        raise
    except ApiRefusal as error:
        intent.state = IntentState.REFUSED
        intent.error_code, intent.error_message = error.code, error.message
        raise
    except Exception:
        _unknown_after_failure(intent)
        raise
    else:
        intent.state = IntentState.SENT
        intent.error_code = intent.error_message = None
    finally:
        try:
            db.session.commit()
        except Exception:
            _unknown_after_failure(intent)
            db.session.commit()
            raise


def _unknown_after_failure(intent: Settled) -> None:
    db.session.rollback()  # the failure may have broken the transaction
    intent.state = IntentState.UNKNOWN
    intent.error_message = PORTAL_FAILURE


# --- Forms that carry their key ---------------------------------------------------------------


def _of(merchant: Merchant, kind: IntentKind, key: str) -> list[sa.ColumnElement[bool]]:
    return [
        IdempotencyKey.merchant_id == merchant.id,
        IdempotencyKey.kind == kind,
        IdempotencyKey.key == key,
    ]


def reserve(
    merchant: Merchant, user: User, kind: IntentKind, key: str, parameters: Mapping[str, object]
) -> IdempotencyKey:
    """The form's intent under `key`, inserted `pending` unless a form with it came before:
    held for an approval, nothing sent (the worker claims it once approved). Committed."""
    db.session.execute(
        _insert_unless_taken(merchant, user, kind, key, parameters, IntentState.PENDING)
    )
    db.session.commit()
    intent = find(merchant, kind, key)
    assert intent is not None  # inserted, or there before
    return intent


def find(merchant: Merchant, kind: IntentKind, key: str) -> IdempotencyKey | None:
    """The merchant's intent of this kind under `key`, if a form with it was ever sent."""
    return db.session.scalar(sa.select(IdempotencyKey).where(*_of(merchant, kind, key)))


def _insert_unless_taken(
    merchant: Merchant,
    user: User,
    kind: IntentKind,
    key: str,
    parameters: Mapping[str, object],
    state: IntentState,
) -> sa.Insert:
    """The INSERT of a new intent in `state`, which does nothing when the key is taken (on both
    databases the portal runs on)."""
    now = utcnow()
    dialect = postgresql if db.session.get_bind().dialect.name == "postgresql" else sqlite
    return (
        dialect.insert(IdempotencyKey)
        .values(
            merchant_id=merchant.id,
            kind=kind,
            key=key,
            user_id=user.id,
            parameters=dict(parameters),
            state=state,
            created_at=now,
            updated_at=now,
        )
        .on_conflict_do_nothing(index_elements=["merchant_id", "kind", "key"])
    )


def claim(
    merchant: Merchant, user: User, kind: IntentKind, key: str, parameters: Mapping[str, object]
) -> tuple[IdempotencyKey, bool]:
    """Claim the form's key for sending: the intent, and whether this caller won it.

    A new key is claimed by inserting its intent, a `pending` one (nothing ever left) by moving
    it to `sending` with the parameters sent now, which the day's limits count; every other
    caller loses, and so does a form whose key an approval holds (only the worker sends that,
    once approved, with the parameters approved). What the caller added to the session is
    committed with a won claim and dropped with a lost one.
    """
    inserted = db.session.scalar(
        _insert_unless_taken(merchant, user, kind, key, parameters, IntentState.SENDING).returning(
            IdempotencyKey.id
        )
    )
    held = sa.exists().where(Approval.voucher_intent_id == IdempotencyKey.id)
    won = inserted is not None or take_pending(
        IdempotencyKey,
        *_of(merchant, kind, key),
        ~held,
        user_id=user.id,
        parameters=dict(parameters),
    )
    if won:
        db.session.commit()
    else:
        db.session.rollback()
    intent = find(merchant, kind, key)
    assert intent is not None  # inserted or found by the statements above
    db.session.refresh(intent)
    return intent, won

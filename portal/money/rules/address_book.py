"""The address book: the named addresses money may leave the wallets for.

A withdrawal, or a refund to an address staff typed, goes only to an address of the book that
finished its cooling-off (`PORTAL_ADDRESS_COOLING_OFF_HOURS` after it was added), or that an
owner other than the one who added it approved: a stolen session that adds its own address must
wait, while every owner is mailed. A customer's claimed refund address needs no entry: the
refund cannot exceed what that operation may give back. Adding and removing are audited.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from flask import current_app
from sqlalchemy.exc import IntegrityError

from portal.database import utcnow
from portal.extensions import db, rows_changed
from portal.identity.models import Merchant, User
from portal.identity.rules import audit
from portal.live.rules import outbox
from portal.money.models import BookAddress
from portal.money.rules import approvals


class Standing(enum.StrEnum):
    """Where an address stands in the book."""

    UNKNOWN = "unknown"  # not in the book: nothing may go to it
    COOLING = "cooling"  # in the book, usable from `usable_from`
    USABLE = "usable"


@dataclass(frozen=True)
class Place:
    standing: Standing
    entry: BookAddress | None


class AddressRefused(Exception):
    """An address the book cannot take, in words for the person who typed it."""


def cooling_off(merchant: Merchant) -> timedelta:
    """How long a new address of `merchant` waits: the owners' own setting, else
    `PORTAL_ADDRESS_COOLING_OFF_HOURS` (`portal.money.rules.controls` changes it)."""
    hours = merchant.address_cooling_off_hours
    if hours is None:
        return timedelta(hours=float(current_app.config["ADDRESS_COOLING_OFF_HOURS"]))
    return timedelta(hours=float(hours))


def entries(merchant: Merchant) -> list[BookAddress]:
    return list(
        db.session.scalars(
            sa.select(BookAddress)
            .where(BookAddress.merchant_id == merchant.id)
            .order_by(BookAddress.currency, BookAddress.name, BookAddress.id)
        )
    )


def find(merchant: Merchant, entry_id: int) -> BookAddress | None:
    return db.session.scalar(
        sa.select(BookAddress).where(
            BookAddress.id == entry_id, BookAddress.merchant_id == merchant.id
        )
    )


def place(merchant: Merchant, currency: str, address: str, now: datetime | None = None) -> Place:
    """Whether money of `currency` may go to `address` now."""
    entry = db.session.scalar(
        sa.select(BookAddress).where(
            BookAddress.merchant_id == merchant.id,
            BookAddress.currency == currency,
            BookAddress.address == address,
        )
    )
    if entry is None:
        return Place(Standing.UNKNOWN, None)
    usable = entry.usable_from <= (now or utcnow())
    return Place(Standing.USABLE if usable else Standing.COOLING, entry)


def add(user: User, currency: str, address: str, name: str) -> BookAddress:
    """Add an address, usable after the cooling-off; audited and mailed to every owner."""
    now = utcnow()
    entry = BookAddress(
        merchant_id=user.merchant_id,
        currency=currency,
        address=address,
        name=name,
        added_by_id=user.id,
        created_at=now,
        usable_from=now + cooling_off(user.merchant),
    )
    db.session.add(entry)
    try:
        db.session.flush()
    except IntegrityError:
        db.session.rollback()
        raise AddressRefused(f"This {currency} address is in the address book already.") from None
    audit.record("address_book.add", parameters=_described(entry))
    outbox.queue_to_owners(
        user.merchant_id,
        f"{_article(currency)} {currency} address was added to the address book",
        f"{user.email} added the {currency} address {address} ({name}). Money may go to it "
        f"from {entry.usable_from:%Y-%m-%d %H:%M} UTC, or earlier if another owner approves "
        "it. If nobody you know added it, remove it under Address book.\n",
    )
    db.session.commit()
    return entry


def remove(entry: BookAddress, user: User) -> None:
    """Take an address out of the book at once; audited and mailed to every owner. Nothing
    more goes to it: what waits for an approval, or is ready, to go there is stopped."""
    described = _described(entry)
    db.session.delete(entry)
    audit.record("address_book.remove", parameters=described)
    approvals.reject_sending_to(user, entry.currency, entry.address)
    outbox.queue_to_owners(
        user.merchant_id,
        f"{_article(entry.currency)} {entry.currency} address was removed from the address book",
        f"{user.email} removed the {entry.currency} address {entry.address} ({entry.name}).\n",
    )
    db.session.commit()


def approve(entry: BookAddress, owner: User) -> bool:
    """An owner other than the one who added it ends the cooling-off now; True when this
    approval did (the caller checks the owner is another)."""
    assert owner.id != entry.added_by_id
    now = utcnow()
    won = rows_changed(
        sa.update(BookAddress)
        .where(BookAddress.id == entry.id, BookAddress.usable_from > now)
        .values(usable_from=now, approved_by_id=owner.id)
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    db.session.refresh(entry)
    if won:
        audit.record("address_book.approve", parameters=_described(entry))
    return bool(won)


def _article(currency: str) -> str:
    return "An" if currency[0] in "AEFHILMNORSX" else "A"


def _described(entry: BookAddress) -> dict[str, object]:
    return {
        "currency": entry.currency,
        "address": entry.address,
        "name": entry.name,
        "usable_from": entry.usable_from.isoformat(),
    }

"""The ledger of a test's merchant: movements booked through the ledger's own rule, and the
totals it keeps of them by month and day (`portal.money.rules.ledger_totals`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal

import sqlalchemy as sa
from flask import Flask

from tests.support.portal_app import MERCHANT

# A movement: its kind, currency, amount and moment.
Movement = tuple[str, str, Decimal, datetime]


def book(app: Flask, movements: Iterable[Movement], merchant: str = MERCHANT) -> None:
    """Book `movements` in the merchant's ledger (its API connection made already), as the
    portal books a balance an owner entered, in one transaction."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.rules import ledger

    with app.app_context():
        found = accounts.merchant_named(merchant)
        for kind, currency, amount, at in movements:
            subject = uuid.uuid4().hex  # each movement's own key
            ledger.book_entered(found, ledger.Kind(kind), subject, currency, amount, at)
        db.session.commit()


def totals_of(app: Flask) -> list[tuple]:
    """Every total the ledger keeps, sorted, with everything it holds but its id: merchant,
    generation, span, first day, currency, kind, value currency, amount, count, value, valued,
    first and last moments."""
    from portal.extensions import db
    from portal.money.models import LedgerTotal

    total = LedgerTotal
    columns = [column for column in total.__table__.columns if column.name != "id"]
    with app.app_context():
        rows = db.session.execute(sa.select(*columns)).all()
        db.session.rollback()  # no transaction left open for a migration to wait on
        return sorted(tuple(row) for row in rows)

"""Reading the audit log of one merchant, and writing it as CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta

import sqlalchemy as sa

from portal.extensions import db
from portal.identity.models import AuditEvent, Merchant
from portal.identity.rules.audit import ACTIONS, OUTCOMES
from portal.reports.rules.csv_rows import neutralise

CSV_COLUMNS = (
    "Time (UTC)",
    "User",
    "Action",
    "Parameters",
    "Outcome",
    "Error code",
    "Error message",
    "Address",
)


def users_of(merchant: Merchant) -> list[str]:
    """Everyone who appears in the merchant's log, removed users included."""
    return list(
        db.session.scalars(
            sa.select(AuditEvent.user_email)
            .where(AuditEvent.merchant_id == merchant.id, AuditEvent.user_email.is_not(None))
            .distinct()
            .order_by(AuditEvent.user_email)
        )
    )


def events(
    merchant: Merchant,
    *,
    user: str | None = None,
    action: str | None = None,
    date_from: date | None = None,
    date_to: date | None = None,
) -> sa.Select:
    """The merchant's events matching the filters (days inclusive, in UTC), newest first."""
    query = sa.select(AuditEvent).where(AuditEvent.merchant_id == merchant.id)
    if user:
        query = query.where(AuditEvent.user_email == user)
    if action:
        query = query.where(AuditEvent.action == action)
    if date_from:
        query = query.where(AuditEvent.created_at >= datetime.combine(date_from, time(), UTC))
    if date_to and date_to < date.max:  # the last day there is has no day after it
        end = datetime.combine(date_to + timedelta(days=1), time(), UTC)
        query = query.where(AuditEvent.created_at < end)
    return query.order_by(AuditEvent.created_at.desc(), AuditEvent.id.desc())


def describe_parameters(parameters: dict) -> str:
    return "; ".join(f"{key}: {value}" for key, value in parameters.items() if value is not None)


def safe_cell(value: object) -> str:
    """A cell a spreadsheet shows as text, never runs as a formula."""
    return neutralise("" if value is None else str(value))


def csv_rows(found: Iterable[AuditEvent]) -> Iterator[str]:
    """RFC 4180 CSV, one chunk per row, header first."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")

    def row(cells: Iterable[object]) -> str:
        writer.writerow([safe_cell(cell) for cell in cells])
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    yield row(CSV_COLUMNS)
    for event in found:
        yield row(
            (
                event.created_at.isoformat().replace("+00:00", "Z"),
                event.user_email,
                ACTIONS.get(event.action, event.action),
                describe_parameters(event.parameters),
                OUTCOMES.get(event.outcome, event.outcome),
                event.error_code,
                event.error_message,
                event.remote_address,
            )
        )

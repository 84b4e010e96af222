"""The statement by mail: a user who reads money (an owner or an accountant) chooses a weekly or
monthly statement, and the worker's tick mails each period's once, after it ended in the
user's own time zone.

Once: the record of the mail (`StatementMail`, unique per user and period) is written in the
transaction that queues its message, so a restarted worker, or a second one, finds it and
queues nothing. Whether the user still reads money is checked when the mail is queued: a user
demoted to operator, or removed, before then gets nothing.

The mail holds the period's opening, net and closing per currency, a link to sign in and read
the whole statement, and a link that stops these mails without signing in (also sent as the
`List-Unsubscribe` header, RFC 8058). That link is signed with the portal's secret key and names
the user: anyone holding it can only stop the mails it was sent with.
"""

from __future__ import annotations

import tempfile
from datetime import date, timedelta

import sqlalchemy as sa
from flask import current_app
from itsdangerous import BadSignature, URLSafeSerializer
from sqlalchemy.exc import IntegrityError

from portal.database import utcnow
from portal.extensions import db
from portal.identity.models import Role, User
from portal.live.models import StatementChoice, StatementFrequency, StatementMail
from portal.live.rules import outbox
from portal.live.rules.mail import isolated
from portal.money.rules.currencies import money
from portal.periods import Period, zone_named
from portal.reports.rules.csv_rows import TimeZone
from portal.reports.rules.ledger_rows import write_workbook
from portal.reports.rules.statement import Line, statement
from portal.reports.rules.workbook import TooManyRows

READERS = frozenset({Role.OWNER, Role.ACCOUNTANT})
STOP_PATH = "/statement-mail/stop/"
_STOP_SALT = "statement-mail-stop"
_EVERY = {StatementFrequency.WEEKLY: "week", StatementFrequency.MONTHLY: "month"}
# The largest ledger workbook a statement mail carries: mail servers refuse larger messages.
ATTACHMENT_LIMIT = 5 * 1024 * 1024


class StopRefused(Exception):
    """The stop link is not one the portal signed (or its user is gone)."""


# --- Choices ---------------------------------------------------------------------------------


def choice_of(user: User) -> StatementFrequency:
    """How often `user` gets the statement by mail."""
    choice = db.session.get(StatementChoice, user.id)
    return choice.frequency if choice is not None else StatementFrequency.NONE


def choose(user: User, frequency: StatementFrequency) -> None:
    """Mail `user` the statement this often from now on; periods that ended before are not
    sent. Only a user who reads money may choose one (the pages offer it to them alone)."""
    if frequency is not StatementFrequency.NONE and user.role not in READERS:
        raise ValueError("only owners and accountants read the statement")
    choice = db.session.get(StatementChoice, user.id)
    if choice is None:
        db.session.add(StatementChoice(user_id=user.id, frequency=frequency, chosen_at=utcnow()))
    elif choice.frequency is not frequency:
        choice.frequency, choice.chosen_at = frequency, utcnow()
    db.session.commit()


def stop_link(user: User) -> str:
    """The absolute link that stops `user`'s statement mails without signing in. It names the
    user by id and address: an id alone would, once the user is removed, name whoever gets
    the id next (SQLite gives a removed row's id again)."""
    return outbox.portal_link(STOP_PATH + _signer().dumps([user.id, user.email]))


def user_of_stop_link(token: str) -> User:
    """The user a stop link was made for, while they have that address; `StopRefused` for
    any other token."""
    try:
        named = _signer().loads(token)
    except BadSignature as refused:
        raise StopRefused from refused
    if not (isinstance(named, list) and len(named) == 2 and isinstance(named[0], int)):
        raise StopRefused
    user = db.session.get(User, named[0])
    if user is None or user.email != named[1]:
        raise StopRefused
    return user


def stop(token: str) -> User:
    """Stop the statement mails of the stop link's user (again: nothing changes)."""
    user = user_of_stop_link(token)
    choose(user, StatementFrequency.NONE)
    return user


def _signer() -> URLSafeSerializer:
    return URLSafeSerializer(current_app.config["SECRET_KEY"], salt=_STOP_SALT)


# --- Periods ---------------------------------------------------------------------------------


def last_period(frequency: StatementFrequency, today: date) -> tuple[date, date]:
    """The last whole period before `today`: Monday to Sunday, or a calendar month."""
    if frequency is StatementFrequency.WEEKLY:
        sunday = today - timedelta(days=today.weekday() + 1)
        return sunday - timedelta(days=6), sunday
    last_day = today.replace(day=1) - timedelta(days=1)
    return last_day.replace(day=1), last_day


# --- Queueing --------------------------------------------------------------------------------


def queue_due() -> None:
    """Queue the statement of each user whose period just ended in their zone and was not
    mailed yet. Called on every tick of the worker, before the outbox is sent; one user's
    failure is logged and the others' statements go on."""
    if not outbox.enabled():
        return
    for user_id in db.session.scalars(
        sa.select(User.id)
        .join(StatementChoice, StatementChoice.user_id == User.id)
        .where(StatementChoice.frequency != StatementFrequency.NONE, User.role.in_(READERS))
    ).all():
        isolated(_queue_due_of, user_id, doing="queueing the statement of user")


def _queue_due_of(user_id: int) -> None:
    """The user's last period, when it ended after they chose and was not mailed yet."""
    user = db.session.get(User, user_id)
    choice = db.session.get(StatementChoice, user_id)
    if user is None or choice is None:
        return  # removed, or the choice stopped, meanwhile
    zone = zone_named(user.time_zone)
    since, until = last_period(choice.frequency, utcnow().astimezone(zone).date())
    period = Period(since, until, zone)
    if period.instants[1] > choice.chosen_at and not _mailed(user, period):
        _queue(user, choice.frequency, period)


def _mailed(user: User, period: Period) -> bool:
    return (
        db.session.scalar(
            sa.select(StatementMail.id).where(
                StatementMail.user_id == user.id,
                StatementMail.period_start == period.since,
                StatementMail.period_end == period.until,
            )
        )
        is not None
    )


def _queue(user: User, frequency: StatementFrequency, period: Period) -> None:
    """The record and the message in one transaction; a worker that lost the race to another
    finds the record taken and queues nothing."""
    try:
        db.session.add(
            StatementMail(user_id=user.id, period_start=period.since, period_end=period.until)
        )
        db.session.flush()
    except IntegrityError:
        db.session.rollback()
        return
    subject = f"Your {_EVERY[frequency]}ly statement of {user.merchant.name}: {_days(period)}"
    attachment = workbook(user, period)
    outbox.queue(
        user.email,
        subject,
        _body(user, frequency, period, attached=attachment is not None),
        user_id=user.id,
        stop_url=stop_link(user),
        attachment=attachment,
    )
    db.session.commit()


def _body(user: User, frequency: StatementFrequency, period: Period, *, attached: bool) -> str:
    """The period, each currency's opening, net received and closing, and the two links."""
    since, until = period.instants
    figures = statement(user.merchant, since, until)
    lines = [f"The statement of {user.merchant.name} for {_days(period)} ({user.time_zone}).", ""]
    for currency in figures.currencies:
        net = next(f.amount for f in currency.lines if f.line is Line.NET)
        lines += [
            currency.currency,
            f"  Opening:      {money(currency.opening, currency.currency)}",
            f"  Net received: {money(net, currency.currency)}",
            f"  Closing:      {money(currency.closing, currency.currency)}",
            "",
        ]
    if not figures.currencies:
        lines += ["No wallet held money in this period.", ""]
    query = f"/reports?from={period.since.isoformat()}&to={period.until.isoformat()}"
    lines += [
        "The ledger of the period is attached as a workbook (.xlsx)."
        if attached
        else "The ledger of the period is too large to attach: download it from Balances.",
        "",
        "Sign in to read the whole statement:",
        outbox.portal_link(query),
        "",
        f"You get this mail every {_EVERY[frequency]} because you chose it on your account page.",
        "Stop these mails (one click, no sign-in):",
        stop_link(user),
        "",
    ]
    return "\n".join(lines)


def workbook(user: User, period: Period) -> tuple[str, bytes] | None:
    """The period's ledger as a workbook (file name, bytes), in the user's zone; None when it is
    larger than `ATTACHMENT_LIMIT` or than a sheet holds: the statement page has it."""
    since, until = period.instants
    zone = TimeZone(period.zone, user.time_zone)
    with tempfile.TemporaryFile() as file:
        try:
            write_workbook(file, user.merchant, since, until, zone)
        except TooManyRows:
            return None
        if file.tell() > ATTACHMENT_LIMIT:
            return None
        file.seek(0)
        return f"ledger_{period.since}_{period.until}.xlsx", file.read()


def _days(period: Period) -> str:
    return f"{period.since.isoformat()} to {period.until.isoformat()}"

"""Balance pages: every currency's balance, one currency's movements, and an owner's entered
balance (its opening, then adjustments)."""

from __future__ import annotations

from datetime import date, datetime

from flask import abort, flash, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.database import utcnow
from portal.identity.models import Role
from portal.money.pages.balances import bp
from portal.money.pages.balances.forms import BalanceForm, LedgerPeriodForm
from portal.money.rules import balances
from portal.money.rules.balances import Balance, BalanceRefused, Booked, Refusal
from portal.money.rules.ledger import KIND_WORDS, Kind
from portal.periods import Period
from portal.reports.rules import ledger_rows
from portal.reports.rules.csv_rows import TimeZone
from portal.web.access import roles
from portal.web.exports import file_name, rows_csv_download, workbook_download
from portal.web.formatting import money, user_zone, user_zone_name
from portal.web.lists import local_page
from portal.web.rendering import page
from portal.web.step_up import form_refused


def kind_words(kind: str) -> str:
    """A movement's kind in plain words (a kind the page has no words for, as it is named)."""
    return KIND_WORDS.get(kind, kind.replace("_", " ").capitalize())  # type: ignore[call-overload]


@bp.route("")
@roles(Role.OWNER, Role.ACCOUNTANT)
def index() -> Response:
    """Each currency's balance as the portal derives it, its value, and since when."""
    form = LedgerPeriodForm(request.args)
    days = form.days(_today())
    if days is not None:  # the period the ledger's buttons download, this month by default
        form.since.data, form.until.data = days
    return _index_page(form, 200 if days else 422)


@bp.get("/ledger.csv")
@roles(Role.OWNER, Role.ACCOUNTANT)
def ledger_csv() -> Response:
    """The ledger of the period (From and To in the reader's zone), streamed as CSV."""
    form = LedgerPeriodForm(request.args)
    period = _period(form)
    if period is None:
        return _index_page(form, 422)
    merchant, zone = current_user.merchant, _reader_zone()
    since, until = period.instants
    return rows_csv_download(
        lambda: ledger_rows.ledger_rows(merchant, since, until),
        ledger_rows.ledger_columns(merchant.reporting_currency),
        zone,
        file_name("ledger", zone, (period.since, period.until)),
    )


@bp.get("/ledger.xlsx")
@roles(Role.OWNER, Role.ACCOUNTANT)
def ledger_xlsx() -> Response:
    """The ledger of the period as a workbook: a Summary sheet and a sheet per currency."""
    form = LedgerPeriodForm(request.args)
    period = _period(form)
    if period is None:
        return _index_page(form, 422)
    merchant, zone = current_user.merchant, _reader_zone()
    since, until = period.instants
    return workbook_download(
        lambda file: ledger_rows.write_workbook(file, merchant, since, until, zone),
        "ledger",
        zone,
        (period.since, period.until),
    )


@bp.route("/<currency>")
@roles(Role.OWNER, Role.ACCOUNTANT)
def movements(currency: str) -> Response:
    """One currency's balance and the movements it is derived from, newest first; the form
    that enters its balance, for owners."""
    return _movements_page(_balance(currency), BalanceForm())


@bp.post("/<currency>/opening")
@roles(Role.OWNER)
def opening(currency: str) -> Response:
    """Book the balance an owner entered: the opening, or the adjustment from the derived one.
    It sets the figures every balance is derived from, so an owner with two-factor on confirms
    it with a fresh code."""
    balance = _balance(currency)
    form = BalanceForm()
    owner = current_user._get_current_object()
    status = form_refused(form, owner, purpose="balance")
    if status:
        return _movements_page(balance, form, status)
    try:
        booked = balances.enter_balance(
            owner.merchant, owner, currency, form.amount.entered, form.as_of.data or utcnow()
        )
    except BalanceRefused as refusal:
        form.as_of.errors = [*form.as_of.errors, _refusal_sentence(refusal, currency)]
        return _movements_page(
            balance, form, 409 if refusal.reason is Refusal.NOT_CONNECTED else 422
        )
    flash(_booked_sentence(booked), "success")
    return redirect(url_for("balances.movements", currency=currency))


def _index_page(form: LedgerPeriodForm, status: int = 200) -> Response:
    merchant = current_user.merchant
    return page(
        "balances/index.html",
        status,
        balances=balances.balances(merchant),
        merchant=merchant,
        ledger_form=form,
    )


def _reader_zone() -> TimeZone:
    return TimeZone(user_zone(), user_zone_name())


def _today() -> date:
    return utcnow().astimezone(user_zone()).date()


def _period(form: LedgerPeriodForm) -> Period | None:
    days = form.days(_today())
    return None if days is None else Period(*days, user_zone())


def _balance(currency: str) -> Balance:
    balance = balances.balance_of(current_user.merchant, currency)
    if balance is None:
        abort(404)
    return balance


def _movements_page(balance: Balance, form: BalanceForm, status: int = 200) -> Response:
    entries = local_page(balances.movements(current_user.merchant, balance.currency))
    return page(
        "balances/movements.html",
        status,
        balance=balance,
        page=entries,
        form=form,
        kind_words=kind_words,
    )


def _booked_sentence(booked: Booked) -> str:
    moment = _utc(booked.as_of)
    if booked.kind is Kind.OPENING:
        return f"Opening balance of {money(booked.amount, booked.currency)} as of {moment} booked."
    return (
        f"Adjustment of {money(booked.amount, booked.currency)} booked as of {moment}: the portal "
        f"had derived {money(booked.derived, booked.currency)}."
    )


def _utc(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _refusal_sentence(refusal: BalanceRefused, currency: str) -> str:
    if refusal.reason is Refusal.FUTURE:
        return "That moment has not come yet: enter a balance as of now or earlier."
    if refusal.reason is Refusal.NOT_AFTER_LAST:
        assert refusal.last is not None  # the rule names it
        return (
            f"A balance of {currency} was entered as of {_utc(refusal.last)}: enter one as of "
            "a later moment, so that it does not contradict that one."
        )
    if refusal.reason is Refusal.IN_MAILED_PERIOD:
        assert refusal.last is not None  # the rule names it
        return (
            f"A statement up to {_utc(refusal.last)} was already sent by e-mail, and a period "
            "sent never changes: enter the balance as of a later moment, such as now."
        )
    return "Connect the payment service first: balances are derived from what the portal sees."

"""Exactly one upstream withdrawal per confirmed form, however many confirmations race.

Ten threads confirm one intent at once (each with its own database connection, as gunicorn
workers would), on SQLite and on PostgreSQL; the sandbox must hold exactly one withdrawal.
"""

from __future__ import annotations

import pytest

from tests.support.forms import csrf_token, signed_in
from tests.support.money import connect, race, review_withdrawal

pytestmark = pytest.mark.usefixtures("each_database")  # every test on SQLite, then PostgreSQL


def test_ten_concurrent_confirmations_make_one_withdrawal(app, accounts, module_sandbox):
    connect(app, module_sandbox)
    owner = signed_in(app, accounts.owner)
    address, review = review_withdrawal(owner)
    token = csrf_token(owner, review)
    statuses = race(app, owner, review + "/confirm", {"csrf_token": token}, 10)

    assert statuses == [302] * 10
    assert module_sandbox.operations_to(address) == 1
    page = owner.get(review).get_data(as_text=True)
    assert "Sent" in page and "Operation " in page


def test_claim_is_one_time_across_database_connections(app, accounts):
    """A second connection that read the intent as pending before the claim still loses."""
    import sqlalchemy as sa

    from portal.extensions import db
    from portal.identity.models import User
    from portal.money.models import IntentState, WithdrawalIntent
    from portal.money.rules import withdrawals as intents

    with app.app_context():
        user = db.session.scalar(db.select(User).where(User.email == accounts.owner))
        key = intents.create(user.merchant, user, 1, "BTC", "tb1qexample")
        first = db.session.scalar(db.select(WithdrawalIntent).where(WithdrawalIntent.key == key))
        with sa.orm.Session(db.engine) as other:
            second = other.scalar(db.select(WithdrawalIntent).where(WithdrawalIntent.key == key))
            assert intents.claim(first, user) is True
            result = other.execute(
                db.update(WithdrawalIntent)
                .where(WithdrawalIntent.id == second.id, WithdrawalIntent.state == "pending")
                .values(state=IntentState.SENDING)
            )
            other.commit()
            assert result.rowcount == 0
        assert intents.claim(first, user) is False


def test_a_confirmation_its_process_left_sending_becomes_an_outcome_to_check(app, accounts):
    """Its gunicorn worker died between the claim and the answer: the worker's pass makes it
    unknown once longer than any request takes, never pending (it may have been sent)."""
    from datetime import timedelta

    import sqlalchemy as sa

    from portal.database import utcnow
    from portal.extensions import db
    from portal.identity.models import User
    from portal.money.models import IntentState, WithdrawalIntent
    from portal.money.rules import approvals
    from portal.money.rules import withdrawals as intents

    with app.app_context():
        user = db.session.scalar(db.select(User).where(User.email == accounts.owner))
        for _ in range(2):
            key = intents.create(user.merchant, user, 1, "BTC", "tb1qexample")
            intent = db.session.scalar(
                db.select(WithdrawalIntent).where(WithdrawalIntent.key == key)
            )
            assert intents.claim(intent, user)
        db.session.execute(
            sa.update(WithdrawalIntent)
            .where(WithdrawalIntent.id == intent.id)
            .values(updated_at=utcnow() - timedelta(minutes=11))
        )
        db.session.commit()

        claimed_at = db.session.scalars(
            sa.select(WithdrawalIntent.updated_at).order_by(WithdrawalIntent.id)
        ).all()

        assert approvals.send_due() == 0
        states = db.session.scalars(sa.select(WithdrawalIntent.state).order_by(WithdrawalIntent.id))
        assert list(states) == [IntentState.SENDING, IntentState.UNKNOWN]
        # The claim's moment stays: the end of the time it was under way (lost answers are tied
        # to what was made then) and the day it counts on.
        assert (
            db.session.scalars(
                sa.select(WithdrawalIntent.updated_at).order_by(WithdrawalIntent.id)
            ).all()
            == claimed_at
        )

"""One merchant whose sync fails, in any way, fails alone: its error is recorded on its mirror
and shown to its owners, its lease is released, the tick goes on with the other merchants, and
it does not come first in the next tick. Each merchant's API is a real server on loopback."""

from __future__ import annotations

import contextlib

import sqlalchemy as sa

from portal.api import MerchantApiClient
from tests.support import factories
from tests.support.fake_api import TOKEN, Answer, FakeApi, operation_json, page_json
from tests.support.forms import signed_in
from tests.support.money import text
from tests.support.portal_app import connected_portal

# The answer of each hostile merchant's API: one operation the portal cannot keep.
HOSTILE = {
    "Surrogate": operation_json(order_id="\ud800"),  # sent as the JSON escape "\ud800"
    "Long": operation_json(order_id="x" * 256),  # the mirror's column holds 255
    "Refused": operation_json(),  # a fine record, which the database refuses (a trigger)
}


def connect_to(app, name: str, api: FakeApi) -> int:
    """Merchant `name`, with an owner, connected to `api`; its id."""
    from portal.identity.rules import accounts
    from portal.settings.models import Environment
    from portal.settings.rules.connection import Credentials, connect

    api.answer("GET", "/v1/ping", Answer(200, {"data": {"status": "ok"}}))
    page = page_json([HOSTILE[name]], page=1, per_page=100, total=1)
    api.answer("GET", "/v1/operations", Answer(200, page))
    factories.user(app, owner(name), "owner", merchant=name)
    with app.app_context():
        merchant = accounts.merchant_named(name)
        connect(merchant, Credentials(api.base_url, Environment.PRODUCTION, TOKEN))
        return merchant.id


def owner(name: str) -> str:
    return f"owner@{name.lower()}.test"


def refuse_rows_of(app, merchant_id: int) -> None:
    """The database refuses the merchant's mirrored operations, as it would a value it cannot
    store: the sync fails with an IntegrityError, no ApiFailure."""
    from portal.extensions import db

    with app.app_context():
        db.session.execute(
            sa.text(
                "CREATE TRIGGER refuse_rows BEFORE INSERT ON mirrored_operations "
                f"WHEN NEW.merchant_id = {merchant_id} "
                "BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        )
        db.session.commit()


def tick(app) -> dict[int, object]:
    """One tick's syncs, by merchant id, in the order they ran."""
    from portal.live.rules import mirror

    with app.app_context():
        return {report.merchant_id: report for report in mirror.sync_due()}


def test_a_hostile_record_or_a_refused_row_fails_only_its_merchant(tmp_path, sandbox):
    from portal.database import utcnow
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.models import MirrorState
    from portal.payments.models import MirroredOperation

    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    api.create_operation("0.5", "BTC", "acme-1")
    with contextlib.ExitStack() as stack:
        app = stack.enter_context(connected_portal(tmp_path, sandbox, SYNC_SECONDS=0))
        with app.app_context():
            acme = accounts.merchant_named("Acme").id
        assert tick(app)[acme].error is None  # synced once: the new merchants come first
        api.create_operation("0.7", "BTC", "acme-2")
        hostile = {name: connect_to(app, name, stack.enter_context(FakeApi())) for name in HOSTILE}
        refuse_rows_of(app, hostile["Refused"])

        reports = tick(app)
        assert list(reports)[-1] == acme and reports[acme].error is None
        with app.app_context():
            orders = db.session.scalars(
                sa.select(MirroredOperation.order_id).where(MirroredOperation.merchant_id == acme)
            )
            assert set(orders) == {"acme-1", "acme-2"}
        errors = {name: reports[merchant].error for name, merchant in hostile.items()}
        assert "ApiUnavailable" in errors["Surrogate"] and "lone surrogate" in errors["Surrogate"]
        assert "ApiUnavailable" in errors["Long"] and "longer than 255" in errors["Long"]
        assert "internal error (IntegrityError)" in errors["Refused"]
        with app.app_context():
            for name, merchant in hostile.items():
                state = db.session.get(MirrorState, merchant)
                assert state.last_error == errors[name]
                assert (state.lease_owner, state.failures) == (None, 1)
                assert state.retry_at is not None and state.operations_watermark is None

        assert next(iter(tick(app))) == acme  # the failing merchants wait their turn after it

        app.config["SYNC_SECONDS"] = 60  # from now on, pauses of minutes
        assert set(tick(app)) == set(hostile.values())  # Acme synced a moment ago
        with app.app_context():
            for merchant in hostile.values():
                state = db.session.get(MirrorState, merchant)
                assert state.failures == 3
                # the interval, doubled for the second failure and the third
                assert 200 < (state.retry_at - utcnow()).total_seconds() <= 240
        assert tick(app) == {}

        for name in hostile:
            client = signed_in(app, owner(name))
            page = text(client.get("/settings/api"))
            assert f"Last error {errors[name][:40]}" in page
            assert "after 3 failed syncs in a row" in page
            if name != "Refused":  # the pages handle the record as a malformed answer: the
                # list reads the portal's copy, read-only
                listed = client.get("/operations")
                assert listed.status_code == 200
                assert "Read-only: the payment service is not answering" in text(listed)

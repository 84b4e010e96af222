"""The suite's own machinery, which the other tests rely on without saying so: the `browser`
marker that `make test-fast` leaves out, the factories of the portal's rows, the URL builders
the applications of one test process share, and the PostgreSQL schema its tests share emptied."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import sqlalchemy as sa
from flask import url_for

from tests.support import factories
from tests.support.databases import emptied_postgres_schema
from tests.support.forms import sign_in
from tests.support.portal_app import ready_portal
from tests.support.sandbox_server import ROOT


@pytest.mark.slow  # a pytest process of its own
def test_a_test_that_drives_chromium_is_marked_browser_wherever_it_lives():
    """`-m "not browser"` (make test-fast) collects none of the tests that ask for Chromium,
    though nothing in their modules marks them."""
    modules = ["tests/identity/test_sign_in_browser.py", "tests/money/test_money_pages_browser.py"]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-p", "no:xdist",
         "-p", "no:cacheprovider", "-m", "not browser", *modules],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    ).stdout  # fmt: skip
    deselected = re.search(r"no tests collected \((\d+) deselected\)", collected)
    assert deselected is not None and int(deselected.group(1)) > 5, collected


def test_a_user_from_the_factory_signs_in_with_the_test_password_and_a_code(app):
    made = factories.user(app, "ops@acme.test", "operator", two_factor=True)
    answer = sign_in(app.test_client(), "ops@acme.test")
    assert answer.status_code == 302
    assert answer.location.endswith("/login/two-factor"), "asked for a code next"
    assert made.email == "ops@acme.test" and made.totp_secret


def test_an_unchecked_address_is_stored_as_it_is(app):
    """As a user stored before addresses were checked: no form takes this address today."""
    from portal.identity.rules.accounts import find_user

    factories.user(app, "x@a.example,other@b.example", "owner", checked=False)
    with app.app_context():
        assert find_user("x@a.example,other@b.example") is not None


def test_applications_of_one_process_share_their_url_builders_and_build_their_own_urls(
    app, portal_config, tmp_path
):
    from portal import create_app

    other = create_app({**portal_config, "DATABASE_URL": f"sqlite:///{tmp_path / 'other.db'}"})
    rules = {rule.endpoint: rule for rule in other.url_map.iter_rules()}
    for rule in app.url_map.iter_rules():
        twin = rules[rule.endpoint]
        assert rule._build.__func__ is twin._build.__func__, rule.rule
    with app.test_request_context():
        assert url_for("withdrawals.show", key="a b") == "/withdrawals/a%20b"


# --- The worker's PostgreSQL schema, emptied for each test ------------------------------------


@pytest.fixture
def on_the_worker_schema(portal_config, postgres_url) -> str:
    portal_config["DATABASE_URL"] = postgres_url
    return postgres_url


def test_the_next_test_on_the_worker_schema_finds_no_row_and_ids_from_1(
    on_the_worker_schema, app, portal_config
):
    """Whatever a test stored, or left in a transaction still open, the next one sees none of it,
    and its first rows get the ids a fresh schema gives."""
    from portal import create_app
    from portal.extensions import db
    from portal.identity.models import Merchant, User

    made = factories.accounts(app)
    assert factories.user(app, "fifth@acme.test", "operator").id == 5
    left_open = sa.create_engine(on_the_worker_schema).connect()
    left_open.execute(sa.select(User.id).with_for_update())  # every row locked, not released

    assert emptied_postgres_schema() == on_the_worker_schema, "the same schema, not a new one"
    following = ready_portal(create_app(portal_config))
    assert factories.user(following, made.owner, "owner").id == 1
    with following.app_context():
        assert db.session.scalars(sa.select(User.email)).all() == [made.owner]
        assert db.session.scalars(sa.select(Merchant.id)).all() == [1]
        db.engine.dispose()
    with pytest.raises(sa.exc.OperationalError):
        left_open.execute(sa.select(1))  # its connection was ended


def test_a_test_that_moves_the_migrations_leaves_the_next_a_schema_at_their_head(
    on_the_worker_schema, app
):
    import flask_migrate

    from portal.extensions import db

    with app.app_context():
        head = db.session.scalar(sa.text("SELECT version_num FROM alembic_version"))
        db.session.remove()
        flask_migrate.downgrade(revision="base")
        db.engine.dispose()

    following = sa.create_engine(emptied_postgres_schema())
    with following.connect() as connection:
        assert connection.scalar(sa.text("SELECT version_num FROM alembic_version")) == head
        assert connection.scalar(sa.text("SELECT count(*) FROM users")) == 0
    following.dispose()

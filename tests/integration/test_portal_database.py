"""The migrations on SQLite and PostgreSQL, and the portal's sign-in on PostgreSQL.

PostgreSQL runs when PORTAL_TEST_DATABASE_URL is set (each test in a schema of its own).
"""

from __future__ import annotations

import flask_migrate
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from tests.support.forms import sign_in

TABLES = {"alembic_version", "merchants", "users", "user_sessions", "api_connections"}


@pytest.fixture(params=["sqlite", "postgresql"])
def portal_config(request, portal_config):
    if request.param == "postgresql":
        portal_config["DATABASE_URL"] = request.getfixturevalue("postgres_url")
    return portal_config


def test_migrations_make_the_models_schema_and_undo_it(app):
    from portal.extensions import db
    from portal.models import is_modelled

    with app.app_context():
        assert set(sa.inspect(db.engine).get_table_names()) >= TABLES
        with db.engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"include_name": is_modelled})
            differences = compare_metadata(context, db.metadata)
        assert differences == [], "the models and the migrations disagree"
        flask_migrate.downgrade(revision="base")
        assert set(sa.inspect(db.engine).get_table_names()) <= {"alembic_version"}
        flask_migrate.upgrade()
        assert set(sa.inspect(db.engine).get_table_names()) >= TABLES


def test_sign_in_and_out(client, accounts):
    assert sign_in(client, accounts.owner, "wrong password").status_code == 401
    assert sign_in(client, accounts.owner).status_code == 302
    assert client.get("/settings/users").status_code == 200
    page = client.get("/").get_data(as_text=True)
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    client.post("/logout", data={"csrf_token": token})
    assert client.get("/").status_code == 302


def test_removing_a_merchant_removes_its_users(app, accounts):
    from portal.extensions import db
    from portal.models import User
    from portal.rules.accounts import merchant_named

    with app.app_context():
        db.session.delete(merchant_named("Other"))
        db.session.commit()
        assert db.session.scalar(sa.select(sa.func.count()).select_from(User)) == 3

"""The schema's migrations (Alembic, through Flask-Migrate), bound to an application on first
use: importing Alembic costs a fifth of a CPU-second, which every process that serves pages or
runs the worker would otherwise pay at its start without ever migrating."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from flask import Flask, current_app
from flask.cli import ScriptInfo

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def bind(app: Flask) -> None:
    """Flask-Migrate on `app` (once), for `upgrade` and the `flask db` commands."""
    import flask_migrate  # here, not at the top: see the module's docstring

    from portal.extensions import db
    from portal.payments.models import is_modelled

    if "migrate" not in app.extensions:
        flask_migrate.Migrate(
            app,
            db,
            directory=str(MIGRATIONS),
            render_as_batch=True,
            include_name=is_modelled,  # `flask db migrate` leaves the search indexes of 0014 alone
        )


def upgrade() -> None:
    """The current application's database to the newest migration."""
    import flask_migrate  # here, not at the top: see the module's docstring

    bind(current_app._get_current_object())  # type: ignore[attr-defined]
    flask_migrate.upgrade()


class MigrationCommands(click.Group):
    """`flask db`: Flask-Migrate's command group, imported when it is run."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        from flask_migrate.cli import db as commands  # here, not at the top: see the docstring

        info = parent.ensure_object(ScriptInfo) if parent else ScriptInfo()
        bind(info.load_app())
        return commands.make_context(info_name, args, parent, **extra)

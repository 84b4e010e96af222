"""Commands for the operator of the portal; they never prompt and exit non-zero on failure.

Every command applies the migrations that have not run yet, so it works on a new database.
"""

from __future__ import annotations

import logging

import click
from flask import Flask, current_app
from flask.cli import with_appcontext
from flask.logging import default_handler

from portal import schema
from portal.crypto import TokenKeyError, rotate_every_column
from portal.demo import demo
from portal.extensions import db
from portal.identity.models import Role
from portal.identity.rules import accounts
from portal.live.rules import mirror
from portal.live.worker.queue import MIN_THREADS, GracefulConsumer, huey
from portal.settings.models import Environment
from portal.settings.pages.connection_messages import rejection_sentence, url_problem_sentence
from portal.settings.rules.connection import (
    ConnectionRejected,
    Credentials,
    base_url_problem,
    connect,
)
from portal.web.users import refusal_sentence


@click.command("create-user")
@click.argument("email")
@click.option("--merchant", "merchant_name", required=True, help="Created when missing.")
@click.option("--role", type=click.Choice([role.value for role in Role]), required=True)
@click.option("--password", required=True)
@with_appcontext
def create_user(email: str, merchant_name: str, role: str, password: str) -> None:
    """Create a user of a merchant."""
    schema.upgrade()
    merchant = accounts.merchant_named(merchant_name, create=True)
    try:
        user = accounts.add_user(merchant, email, Role(role), password)
    except accounts.AccountError as refusal:
        db.session.rollback()
        raise click.ClickException(refusal_sentence(refusal, merchant)) from refusal
    click.echo(f"Created {user.email}, {user.role.value} of {merchant.name}.")


@click.command("connect-api")
@click.option("--merchant", "merchant_name", required=True)
@click.option("--base-url", required=True)
@click.option("--environment", type=click.Choice([env.value for env in Environment]), required=True)
@click.option("--token", required=True)
@click.option("--company-token", default=None)
@with_appcontext
def connect_api(
    merchant_name: str, base_url: str, environment: str, token: str, company_token: str | None
) -> None:
    """Check API credentials against the API, then store them encrypted for a merchant."""
    schema.upgrade()
    merchant = accounts.merchant_named(merchant_name)
    if merchant is None:
        raise click.ClickException(f"No merchant is named {merchant_name!r}; see create-user.")
    base_url = base_url.strip().rstrip("/")
    problem = base_url_problem(base_url)
    if problem:
        raise click.ClickException(f"--base-url: {url_problem_sentence(problem)}")
    credentials = Credentials(base_url, Environment(environment), token, company_token or None)
    try:
        connect(merchant, credentials)
    except ConnectionRejected as rejection:
        raise click.ClickException(rejection_sentence(rejection)) from rejection
    click.echo(f"{merchant.name} is connected to the {environment} API at {base_url}.")


@click.command("rotate-keys")
@with_appcontext
def rotate_keys() -> None:
    """Re-encrypt every stored secret (every `*_encrypted` column: API tokens, two-factor and
    webhook secrets) under the first key; nothing changes when one cannot be decrypted."""
    schema.upgrade()
    try:
        counts = rotate_every_column()
    except TokenKeyError as error:
        raise click.ClickException(str(error)) from error
    for column, count in counts.items():
        click.echo(f"Re-encrypted {count} value(s) of {column} under the newest key.")


def _log_lines() -> None:
    """One line per event on stderr: what each sync did and Huey's start and stop. The
    migrations configured logging for themselves, and Flask's own handler would repeat the
    portal's lines; Huey's line per task and per scheduled tick would drown them."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", force=True)
    current_app.logger.removeHandler(default_handler)
    logging.getLogger("huey").setLevel(logging.WARNING)
    logging.getLogger("huey.consumer").setLevel(logging.INFO)


@click.command("worker")
@click.option(
    "--threads",
    default=4,
    show_default=True,
    type=click.IntRange(min=MIN_THREADS),
    help="Tasks run at once: one delivers webhooks, one sends mail, the others sync.",
)
@with_appcontext
def worker(threads: int) -> None:
    """Run the background worker: the mirror's syncs, webhooks and e-mail. Stop with Ctrl+C or
    SIGTERM: tasks under way finish first."""
    schema.upgrade()
    _log_lines()
    from portal.live.worker import tasks  # registers the tasks with the queue

    consumer = GracefulConsumer(huey, workers=threads, worker_type="thread", periodic=True)
    tasks.plan_rest_of_minute()
    consumer.run()


@click.command("resync")
@click.option("--merchant", "merchant_name", default=None, help="Every connected one if omitted.")
@with_appcontext
def resync(merchant_name: str | None) -> None:
    """Read every operation and transaction of the merchant(s) again and note the differences
    as events; when a worker is syncing a merchant right now, its next tick does it."""
    schema.upgrade()
    _log_lines()
    if merchant_name is None:
        merchant_ids = mirror.connected_merchant_ids()
    else:
        merchant = accounts.merchant_named(merchant_name)
        if merchant is None or merchant.api_connection is None:
            raise click.ClickException(
                f"No merchant named {merchant_name!r} has an API connection."
            )
        merchant_ids = [merchant.id]
    failed = False
    for merchant_id in merchant_ids:
        mirror.request_full_resync(merchant_id)
        report = mirror.sync_merchant(merchant_id, force=True)
        if report is None:
            click.echo(f"Merchant {merchant_id}: a worker holds it now; its next tick resyncs.")
        elif report.error:
            failed = True
            click.echo(f"Merchant {merchant_id}: the resync failed: {report.error}", err=True)
        else:
            click.echo(
                f"Merchant {merchant_id}: {report.operations} operation(s) and "
                f"{report.transactions} transaction(s) updated, {report.events} event(s)."
            )
    if failed:
        raise SystemExit(1)


def init_app(app: Flask) -> None:
    for command in (create_user, connect_api, rotate_keys, demo, worker, resync):
        app.cli.add_command(command)
    app.cli.add_command(schema.MigrationCommands("db", help="Perform database migrations."))

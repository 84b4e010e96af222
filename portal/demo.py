"""`flask --app portal demo`: the portal with the bundled sandbox, a demo merchant and its users."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import click
import requests
from flask import Flask, current_app
from flask.cli import with_appcontext
from werkzeug.serving import run_simple

from portal import schema
from portal.database import utcnow
from portal.extensions import db
from portal.identity.models import Merchant, Role, User
from portal.identity.rules import accounts
from portal.live.rules import mirror
from portal.money.rules.balances import enter_balance
from portal.settings.models import Environment
from portal.settings.pages.connection_messages import rejection_sentence
from portal.settings.rules.connection import ConnectionRejected, Credentials, connect

MERCHANT = "Demo Shop"
SEED = 300
STARTUP_SECONDS = 60.0


def _port_is_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_sandbox(instance: Path, host: str, port: int) -> Iterator[Credentials]:
    """Run `python -m sandbox` (data in instance/) until the block ends; yield its credentials."""
    if port == 0 or not _port_is_free(host, port):
        port = _free_port(host)
    credentials = Credentials(
        f"http://{host}:{port}",
        Environment.SANDBOX,
        token=secrets.token_urlsafe(24),
        company_token=secrets.token_urlsafe(24),
    )
    command = [
        sys.executable, "-m", "sandbox", "--host", host, "--port", str(port),
        "--database", str(instance / "demo-sandbox.sqlite3"),
        f"--token={credentials.token}", f"--company-token={credentials.company_token}",
        "--seed", str(SEED),
    ]  # fmt: skip
    with (instance / "demo-sandbox.log").open("ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
    try:
        _wait_for(host, port, process)
        yield credentials
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@contextlib.contextmanager
def running_worker(instance: Path, public_url: str) -> Iterator[None]:
    """Run `flask --app portal worker` (same instance folder and environment, its log in
    instance/demo-worker.log) until the block ends, then stop it as an operator would.
    `public_url`: the portal's address, for the links of the mails the worker writes."""
    environment = {
        **os.environ,
        "PORTAL_INSTANCE_PATH": str(instance),
        "PORTAL_PUBLIC_URL": public_url,
    }
    command = [sys.executable, "-m", "flask", "--app", "portal", "worker"]
    with (instance / "demo-worker.log").open("ab") as log:
        # A session of its own: Ctrl+C reaches the demo only, which then stops the worker once.
        process = subprocess.Popen(  # noqa: S603
            command, stdout=log, stderr=subprocess.STDOUT, env=environment, start_new_session=True
        )
    try:
        yield
    finally:
        process.terminate()  # SIGTERM: a graceful stop
        try:
            process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_for(host: str, port: int, process: subprocess.Popen) -> None:
    """Until the sandbox listens; it seeds its database first, which takes a few seconds."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise click.ClickException(
                f"The sandbox stopped with exit code {process.returncode}; "
                "see instance/demo-sandbox.log."
            )
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
            return
        time.sleep(0.2)
    raise click.ClickException(f"The sandbox did not answer within {STARTUP_SECONDS:.0f} s.")


def demo_logins() -> list[tuple[Role, str, str]]:
    """One user per role of the demo merchant, each with a fresh password."""
    merchant = accounts.merchant_named(MERCHANT, create=True)
    logins = []
    for role in Role:
        email = f"{role.value}@demo.example"
        password = secrets.token_urlsafe(9)
        user = accounts.find_user(email)
        if user is None:
            accounts.add_user(merchant, email, role, password)
        else:
            user.role = role
            user.set_password(password)
            accounts.revoke_sessions(user)
        logins.append((role, email, password))
    db.session.commit()
    return logins


def open_balances(merchant: Merchant, owner: User, credentials: Credentials) -> None:
    """The first sync, then each wallet's balance as the sandbox holds it entered by `owner`
    as its opening balance as of now: the portal's balances start equal to the sandbox's
    wallets, and the history the sync booked is inside them."""
    report = mirror.sync_merchant(merchant.id, force=True)
    if report is None or report.error:
        raise click.ClickException(f"The first sync failed: {report and report.error}")
    answer = requests.get(
        f"{credentials.base_url}/_control/wallets",
        headers={"Authorization": f"Bearer {credentials.token}"},
        timeout=10,
    )
    answer.raise_for_status()
    as_of = utcnow()
    for wallet in answer.json()["data"]:
        enter_balance(merchant, owner, wallet["currency"], Decimal(wallet["balance"]), as_of)


def public_url(app: Flask, host: str, port: int) -> str:
    """The address people reach the demo at, which the links of its mails use: PORTAL_PUBLIC_URL
    when set, else the host and port it serves (a wildcard or loopback host named `localhost`)."""
    if not app.config.get("PUBLIC_URL"):
        # Browsers offer passkeys to `localhost`, never to an IP address (identity.rules.passkeys).
        loopback = host in ("0.0.0.0", "::", "", "127.0.0.1")  # noqa: S104
        shown = "localhost" if loopback else host
        app.config["PUBLIC_URL"] = f"http://{shown}:{port}"
    return app.config["PUBLIC_URL"]


def _stop_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit, so the sandbox is stopped on the way out."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))


@click.command("demo")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=int)
@click.option("--sandbox-port", default=8100, show_default=True, type=int)
@with_appcontext
def demo(host: str, port: int, sandbox_port: int) -> None:
    """Start the sandbox, connect a demo merchant to it and serve the portal."""
    _stop_on_sigterm()
    schema.upgrade()
    # Flask annotates `current_app` as the application; it is a proxy to it, with this method.
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    if "PORTAL_ADDRESS_COOLING_OFF_HOURS" not in os.environ:
        # A demo's new addresses may be used at once: its withdrawals work the minute it starts.
        app.config["ADDRESS_COOLING_OFF_HOURS"] = 0
    address = public_url(app, host, port)
    with running_sandbox(Path(app.instance_path), host, sandbox_port) as credentials:
        logins = demo_logins()
        try:
            connect(accounts.merchant_named(MERCHANT, create=True), credentials)
        except ConnectionRejected as rejection:
            raise click.ClickException(rejection_sentence(rejection)) from rejection
        owner = accounts.find_user(next(email for role, email, _ in logins if role is Role.OWNER))
        assert owner is not None  # made by demo_logins
        open_balances(owner.merchant, owner, credentials)
        with running_worker(Path(app.instance_path), address):
            click.echo(f"\nMerchant portal: {address}")
            click.echo(f"Sandbox API:     {credentials.base_url} (merchant {MERCHANT!r})")
            click.echo(
                "Worker:          syncs the mirror and sends notifications (demo-worker.log)"
            )
            click.echo("Sign in as:")
            for role, email, password in logins:
                click.echo(f"  {role.value:<11} {email:<26} password {password}")
            click.echo("Stop with Ctrl+C.\n")
            run_simple(host, port, app, threaded=True)

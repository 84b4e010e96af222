"""A merchant's shop that receives webhooks: a real HTTP server on loopback that records each
request (headers and raw body) and answers the status a test chose, as slowly as it chose.

    with run_shop() as shop:
        ... point the portal at shop.url ...
        shop.status = 500          # every answer from now on
        shop.delay = 2.0           # seconds before answering
        shop.headers = {"Location": other.url}   # headers of every answer
        shop.answer = b"thanks"    # the body of every answer
        request = shop.wait_for(1)[0]
        request.json["id"], request.headers["Portal-Signature"], request.body

Every body the shop receives must validate against its type's JSON Schema
(`portal.live.rules.webhook_schemas`, no property it does not name): the block fails otherwise.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jsonschema
import standardwebhooks

from tests.support.polling import wait_for

VERIFIER = Path(__file__).with_name("verify_webhook.js")


@dataclass(frozen=True)
class Received:
    """One request as the shop got it."""

    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict:
        return json.loads(self.body)

    @property
    def event_id(self) -> str:
        return self.json["id"]

    def signatures(self) -> tuple[int, list[str]]:
        """The header's timestamp and its `v1` values."""
        parts = [part.split("=", 1) for part in self.headers["Portal-Signature"].split(",")]
        timestamp = int(next(value for key, value in parts if key == "t"))
        return timestamp, [value for key, value in parts if key == "v1"]

    def signed_by(self, secret: str, tolerance: float = 300) -> bool:
        """The check docs/webhooks.md tells shops to make: a recent timestamp, and one `v1`
        equal (in constant time) to HMAC-SHA256(secret, "<t>.<raw body>")."""
        timestamp, values = self.signatures()
        if abs(time.time() - timestamp) > tolerance:
            return False
        expected = hmac.new(
            secret.encode(), f"{timestamp}.".encode() + self.body, hashlib.sha256
        ).hexdigest()
        return any(hmac.compare_digest(expected, value) for value in values)

    def verified_in_python(self, secret: str) -> dict:
        """The body as the Standard Webhooks library from PyPI verifies it (the headers
        `webhook-id`, `webhook-timestamp`, `webhook-signature`); raises its error otherwise."""
        return standardwebhooks.Webhook(secret).verify(self.body, self.headers)

    def verified_in_javascript(self, secret: str) -> dict | None:
        """The body as the Standard Webhooks library from npm verifies it, run by `node`; None
        when the library refuses it."""
        given = {
            "secret": secret,
            "headers": {name.lower(): value for name, value in self.headers.items()},
            "body": base64.b64encode(self.body).decode(),
        }
        verifier = subprocess.run(
            ["node", str(VERIFIER)],
            input=json.dumps(given),
            capture_output=True,
            text=True,
            cwd=VERIFIER.parents[2],  # where node_modules holds the library
            timeout=30,
            check=False,
        )
        assert verifier.stderr == "", verifier.stderr
        return json.loads(verifier.stdout) if verifier.returncode == 0 else None


@dataclass
class Shop:
    url: str
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    answer: bytes = b"ok"
    received: list[Received] = field(default_factory=list)
    # Each body that did not validate against its type's schema, with why.
    invalid: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests(self) -> list[Received]:
        with self.lock:
            return list(self.received)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        """The first `count` requests, once that many have come."""
        return wait_for(lambda: len(self.received) >= count and self.requests(), timeout)[:count]

    def event_ids(self) -> list[str]:
        return [request.event_id for request in self.requests()]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    # The status line and the body go out in two writes: with Nagle's algorithm the second
    # waits for the portal's delayed ACK, 40 ms per webhook.
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"  # keeps connections alive, as a shop's web server does

    def do_POST(self) -> None:
        shop = self.server.shop
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        problem = _schema_problem(body)
        with shop.lock:
            shop.received.append(Received(self.path, dict(self.headers.items()), body))
            if problem:
                shop.invalid.append(problem)
            status, delay, headers, answer = (
                shop.status,
                shop.delay,
                dict(shop.headers),
                shop.answer,
            )
        if delay:
            time.sleep(delay)
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
        except OSError:  # the portal stopped waiting (its timeout)
            pass

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the tests read `received`."""


def _schema_problem(body: bytes) -> str | None:
    """Why a delivered body does not match its type's schema; None when it does."""
    try:
        document = json.loads(body)
        _validator(document["type"]).validate(document)
    except (ValueError, KeyError, TypeError, jsonschema.ValidationError) as error:
        return f"{type(error).__name__}: {error}"[:2000]
    return None


@functools.cache
def _validator(type_: str) -> jsonschema.protocols.Validator:
    """The validator of a `type_` body, its schema checked once: `jsonschema.validate` checks
    the schema against its metaschema on every call, 26 ms of CPU a body against 0.3 ms."""
    from portal.live.rules import webhook_schemas

    schema = webhook_schemas.schema(type_)
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    return validator(schema)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    shop: Shop


@contextmanager
def run_shop(path: str = "/webhooks", *, webhooks: bool = True) -> Iterator[Shop]:
    """A shop on a free loopback port for the length of the block; `webhooks=False` for a
    server that takes other POSTs (a proxy), whose bodies no schema describes."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.shop = Shop(f"http://127.0.0.1:{server.server_address[1]}{path}")
    # The loop sees a shutdown at its next poll: half a second by default, for every test.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield server.shop
    finally:
        server.shutdown()
        server.server_close()
    assert not (webhooks and server.shop.invalid), (
        f"bodies their type's schema refuses: {server.shop.invalid}"
    )

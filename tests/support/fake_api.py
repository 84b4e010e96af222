"""A real HTTP server on loopback with canned answers, for the tests of the API client.

It records every request it receives (so tests count retries on the server side) and can
answer slowly or drop the connection with a TCP reset instead of answering. No tests here.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from portal.api import MerchantApiClient

TOKEN = "unit-app-token-abcdefghijklmnop"
COMPANY_TOKEN = "unit-company-token-qrstuvwxyz012345"
STAMP = "2024-05-01T10:00:00.123456Z"


@dataclass(frozen=True)
class Answer:
    """What the server does for one request: a body (dict/list as JSON, str as is), or a reset."""

    status: int = 200
    body: Any = None
    content_type: str | None = None
    delay: float = 0.0
    reset: bool = False
    headers: dict[str, str] = field(default_factory=dict)  # `Location`, for a redirect


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    client_port: int

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class FakeApi:
    """Answers `(method, path)` with its canned answers in order, the last one repeating, or
    (`answer_pages`) page N of a list whatever order the pages are asked in."""

    received: list[Received] = field(default_factory=list)
    routes: dict[tuple[str, str], list[Answer]] = field(default_factory=dict)
    pages: dict[tuple[str, str], list[Answer]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> FakeApi:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def answer(self, method: str, path: str, *answers: Answer) -> None:
        self.routes[method, path] = list(answers)

    def answer_pages(self, method: str, path: str, *pages: Answer) -> None:
        """Answer `?page=N` with the Nth of `pages`: clients read pages ahead, concurrently."""
        self.pages[method, path] = list(pages)

    def count(self, method: str, path: str) -> int:
        with self._lock:
            return sum(1 for r in self.received if (r.method, r.path) == (method, path))

    def last(self) -> Received:
        with self._lock:
            return self.received[-1]

    def client(self, **options: Any) -> MerchantApiClient:
        """A client of this server, production environment (paths start with /v1)."""
        options = {
            "base_url": self.base_url,
            "environment": "production",
            "token": TOKEN,
            **options,
        }
        return MerchantApiClient(**options)

    def next_answer(self, request: Received) -> Answer:
        with self._lock:
            self.received.append(request)
            pages = self.pages.get((request.method, request.path))
            if pages:
                return pages[int(request.query.get("page", "1")) - 1]
            answers = self.routes.get((request.method, request.path))
            if not answers:
                return Answer(404, {"code": 0, "message": "Not found"})
            return answers.pop(0) if len(answers) > 1 else answers[0]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeApi

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout, reset) is expected here: no traceback."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        request = Received(
            self.command,
            url.path,
            dict(parse_qsl(url.query, keep_blank_values=True)),
            dict(self.headers.items()),
            body,
            self.client_address[1],
        )
        answer = self.server.fake.next_answer(request)
        time.sleep(answer.delay)
        if answer.reset:
            self._reset()
            return
        if isinstance(answer.body, dict | list):
            payload, content_type = json.dumps(answer.body).encode(), "application/json"
        else:
            payload, content_type = (answer.body or "").encode(), "text/html; charset=utf-8"
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type or content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    do_POST = do_PUT = do_DELETE = do_GET

    def _reset(self) -> None:
        """Drop the connection with a TCP RST, without a byte of answer."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()
        self.connection.close()
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read `FakeApi.received` instead."""


def transaction_json(**overrides: Any) -> dict[str, Any]:
    """A transaction as the API documentation describes it."""
    return {
        "id": "7",
        "tx_id": "f00dbabe",
        "amount": "0.10000000",
        "status": "confirmed",
        "linked": False,
        "reject_reason": None,
        "created_at": STAMP,
        "updated_at": STAMP,
        **overrides,
    }


def operation_json(**overrides: Any) -> dict[str, Any]:
    """An operation as the API documentation describes it."""
    return {
        "id": "42",
        "application_id": "1",
        "application_name": "Shop",
        "category": "application",
        "order_id": "A-1",
        "amount": "100.00000000",
        "fee": "1.00000000",
        "amount_paid": None,
        "rate": "0.00001538",
        "currency": "USD",
        "currency_paid": "BTC",
        "status": "new",
        "address": "tb1qexample",
        "created_at": STAMP,
        "updated_at": STAMP,
        "payment_url": "http://pay.example/pay/42",
        "redirect_url": None,
        "transactions": [],
        **overrides,
    }


def voucher_json(**overrides: Any) -> dict[str, Any]:
    return {
        "id": "3",
        "amount": "1.50000000",
        "currency": "ETH",
        "code": "ABCD-EFGH-IJKL-MNOP",
        "status": "successful",
        "type": "issued",
        "created_at": STAMP,
        "updated_at": STAMP,
        **overrides,
    }


def cross_exchange_json(**overrides: Any) -> dict[str, Any]:
    return {
        "id": "5",
        "operation_id": "43",
        "sell_currency": "BTC",
        "buy_currency": "ETH",
        "sell_amount": "0.10000000",
        "buy_amount": "2.00000000",
        "fee": "0.00020000",
        "rate": "20.00000000",
        "invoice_address": "tb1qinvoice",
        "status": "processed",
        "expired_at": "2024-05-01T10:30:00.000000Z",
        "created_at": STAMP,
        "updated_at": STAMP,
        **overrides,
    }


def page_json(items: list[dict[str, Any]], *, page: int, per_page: int, total: int) -> dict:
    """A pagination envelope around `items`."""
    last_page = max(1, -(-total // per_page))
    first = (page - 1) * per_page + 1
    return {
        "data": items,
        "links": {
            "first": "...?page=1",
            "last": f"...?page={last_page}",
            "prev": None,
            "next": None,
        },
        "meta": {
            "current_page": page,
            "from": first if items else None,
            "to": first + len(items) - 1 if items else None,
            "last_page": last_page,
            "path": "...",
            "per_page": per_page,
            "total": total,
        },
    }

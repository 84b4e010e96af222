"""A peer that answers as slowly as it likes: a real threaded TCP server on loopback that, once
the client says the line it waits for, sends a first line and then one more line every
`interval` seconds, for as long as the client listens. Each line comes well within any
per-read timeout, so only a total deadline ends the conversation.

    with dripping_http() as api:       # "HTTP/1.1 200 OK", then a header line every 0.5 s
        MerchantApiClient(api.url, ...).list_operations()
    with dripping_smtp(at=b"MAIL") as smtp:   # greets and answers EHLO, then drips at MAIL FROM
        ... PORTAL_SMTP_URL = smtp.url ...
    with dripping_smtp(at=b"MAIL", skip=1):   # takes a first message, drips at the second's MAIL

`lines_sent` counts the drips, `connections` the connections accepted, `longest` says how long
the longest conversation lasted.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

INTERVAL = 0.5


@dataclass
class Dripping:
    """What the server says: `greeting` on connecting, `replies` to the client's lines (by
    their first word; after the reply to DATA, the message is read up to its "." line and
    taken), and after the line starting with `trigger` (at once when None; the first `skip`
    such lines get their reply) `first`, then `drip` every `interval` seconds, `times` times
    (or until the client leaves) before hanging up. With `tls`, all of it over TLS."""

    first: bytes
    drip: bytes
    trigger: bytes | None = None
    skip: int = 0
    greeting: bytes = b""
    replies: dict[bytes, bytes] = field(default_factory=dict)
    interval: float = INTERVAL
    times: int | None = None
    tls: ssl.SSLContext | None = None
    url: str = ""
    connections: int = 0
    lines_sent: int = 0
    longest: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def converse(self, connection: socket.socket, stopped: threading.Event) -> None:
        started = time.monotonic()
        with self.lock:
            self.connections += 1
        try:
            if self.tls is not None:
                connection = self.tls.wrap_socket(connection, server_side=True)
            connection.sendall(self.greeting)
            reader = connection.makefile("rb")
            skip = self.skip
            while self.trigger is not None:
                line = reader.readline()
                if not line:
                    return
                if line.upper().startswith(self.trigger):
                    if not skip:
                        break
                    skip -= 1
                command = line.split()[0].upper() if line.strip() else b""
                connection.sendall(self.replies.get(command, b""))
                if command == b"DATA":
                    while reader.readline() not in (b".\r\n", b""):
                        pass
                    connection.sendall(b"250 taken\r\n")
            connection.sendall(self.first)
            sent = 0
            while sent != self.times and not stopped.wait(self.interval):
                connection.sendall(self.drip)
                sent += 1
                with self.lock:
                    self.lines_sent += 1
        except OSError:
            return  # the client hung up: its deadline
        finally:
            with self.lock:
                self.longest = max(self.longest, time.monotonic() - started)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    dripping: Dripping
    stopped: threading.Event


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        self.server.dripping.converse(self.request, self.server.stopped)


@contextlib.contextmanager
def run_dripping(dripping: Dripping, scheme: str = "http") -> Iterator[Dripping]:
    """`dripping` served on a free loopback port for the block; its url is set."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.dripping, server.stopped = dripping, threading.Event()
    dripping.url = f"{scheme}://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield dripping
    finally:
        server.stopped.set()  # every conversation ends: a client still waiting gets its EOF
        server.shutdown()
        server.server_close()


def dripping_http(skip: int = 0) -> contextlib.AbstractContextManager[Dripping]:
    """An HTTP server that, after a request line (the first `skip` of them on a connection get
    an empty JSON answer), sends its status line and then a header line every half second,
    never ending the headers."""
    return run_dripping(
        Dripping(
            first=b"HTTP/1.1 200 OK\r\n",
            drip=b"X-Still-Coming: yes\r\n",
            trigger=b"GET" if skip else b"",  # any line, or the next GET's
            skip=skip,
            replies={b"GET": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"},
        )
    )


def dripping_smtp(
    at: bytes | None = None, skip: int = 0, tls: ssl.SSLContext | None = None
) -> contextlib.AbstractContextManager[Dripping]:
    """An SMTP server that drips its greeting (`at` None), or answers at once until the
    command starting with `at` (after `skip` of them) and drips its reply: one `250-` line
    every half second, never the last line of the reply. With `tls`, an SMTPS server."""
    code = b"220" if at is None else b"250"
    return run_dripping(
        Dripping(
            first=code + b"-slow.test\r\n",
            drip=code + b"-still here\r\n",
            trigger=at,
            skip=skip,
            greeting=b"" if at is None else b"220 slow.test ESMTP\r\n",
            replies={
                b"EHLO": b"250 slow.test\r\n",
                b"MAIL": b"250 ok\r\n",
                b"RCPT": b"250 ok\r\n",
                b"DATA": b"354 go on\r\n",
                b"RSET": b"250 ok\r\n",
            },
            tls=tls,
        ),
        scheme="smtp" if tls is None else "smtps",
    )


def flooding(
    content_type: bytes,
    opening: bytes,
    chunk: bytes,
    *,
    times: int | None = None,
    headers: bytes = b"",
) -> Dripping:
    """An HTTP answer 200 whose body is `opening`, then `chunk` after `chunk` as fast as the
    client reads (`times` chunks, or without end), closed by hanging up: no Content-Length
    unless `headers` has one."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type + b"\r\n" + headers + b"\r\n"
    return Dripping(first=head + opening, drip=chunk, trigger=b"", interval=0, times=times)

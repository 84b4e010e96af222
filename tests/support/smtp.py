"""A real SMTP server on a free loopback port (aiosmtpd), which keeps every message it receives.

    with running_mail_server() as server:
        app = create_app({..., "SMTP_URL": server.url})
        ...
        message = server.wait_for(1)[0]        # the first message, parsed by `email`
        assert message["To"] == "owner@acme.test"

`stop()` and `start()` take the server away and bring it back on the same port, for tests of a
server that is down.
"""

from __future__ import annotations

import contextlib
import email
import email.policy
import re
import threading
import time
from collections.abc import Iterator
from email.message import EmailMessage

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, Envelope, LoginPassword

from tests.support.sandbox_server import free_port

LINK = re.compile(r"https?://\S+")


class _Keeper:
    """The aiosmtpd handler: parses and keeps each message, and wakes whoever waits."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, _server: object, _session: object, envelope: Envelope) -> str:
        """aiosmtpd's hook for a message's content (after the SMTP `DATA` command)."""
        content = envelope.original_content or b""
        parsed = email.message_from_bytes(content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        with self.arrived:
            self.messages.append(parsed)
            self.arrived.notify_all()
        return "250 Message accepted for delivery"


class MailServer:
    """With `login` (user name, password), the server asks for that SMTP AUTH login (over plain
    TCP: the test server has no certificate)."""

    def __init__(self, login: tuple[str, str] | None = None) -> None:
        self.port = free_port()
        self.keeper = _Keeper()
        self.login = login
        self.controller: Controller | None = None

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def _authenticate(self, *args: object) -> AuthResult:
        """aiosmtpd's authenticator: (server, session, envelope, mechanism, auth_data)."""
        data = args[-1]
        expected = tuple(part.encode() for part in self.login or ())
        given = (data.login, data.password) if isinstance(data, LoginPassword) else None
        return AuthResult(success=given == expected)

    @property
    def messages(self) -> list[EmailMessage]:
        with self.keeper.arrived:
            return list(self.keeper.messages)

    def start(self) -> None:
        auth = (
            {"authenticator": self._authenticate, "auth_required": True, "auth_require_tls": False}
            if self.login
            else {}
        )
        self.controller = Controller(self.keeper, hostname="127.0.0.1", port=self.port, **auth)
        self.controller.start()

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def wait_for(self, count: int, timeout: float = 10.0) -> list[EmailMessage]:
        """The first `count` messages, once that many arrived; fails after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self.keeper.arrived:
            while len(self.keeper.messages) < count:
                left = deadline - time.monotonic()
                assert left > 0, f"{len(self.keeper.messages)} of {count} messages arrived"
                self.keeper.arrived.wait(left)
            return list(self.keeper.messages[:count])


def text_of(message: EmailMessage) -> str:
    """The text part of a message, as a mail program shows it."""
    part = message.get_body(preferencelist=("plain",))
    assert part is not None, "the message has no text part"
    return part.get_content()


def link_in(message: EmailMessage) -> str:
    """The first link in the message's text."""
    found = LINK.search(text_of(message))
    assert found, "the message holds no link"
    return found.group(0)


@contextlib.contextmanager
def running_mail_server(login: tuple[str, str] | None = None) -> Iterator[MailServer]:
    server = MailServer(login)
    server.start()
    try:
        yield server
    finally:
        server.stop()

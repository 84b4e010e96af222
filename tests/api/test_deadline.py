"""The total deadline (portal/api/deadline.py) on plain socket pairs: what it ends, what it
leaves alone, through TLS, and in a forked process."""

from __future__ import annotations

import os
import socket
import ssl
import time

import pytest

from portal.api.deadline import DeadlinePassed, watch, within

SHORT = 0.3


def test_a_blocked_read_ends_at_the_deadline_however_long_its_own_timeout():
    mine, peer = socket.socketpair()
    with mine, peer:
        mine.settimeout(30)
        started = time.monotonic()
        with pytest.raises(DeadlinePassed), within(SHORT):
            watch(mine)
            mine.recv(1)  # the peer never writes
        assert SHORT <= time.monotonic() - started < SHORT + 2


def test_a_conversation_over_in_time_keeps_its_socket():
    """The deadline of a call that ended shuts nothing down later (a pooled connection lives on)."""
    mine, peer = socket.socketpair()
    with mine, peer:
        with within(SHORT):
            watch(mine)
            peer.sendall(b"a")
            assert mine.recv(1) == b"a"
        time.sleep(SHORT + 0.2)
        peer.sendall(b"b")
        assert mine.recv(1) == b"b"


def test_a_tls_handshake_on_a_socket_watched_before_it_was_wrapped_ends_at_the_deadline():
    """TLS takes the socket object over (it is detached); the watch still reaches the connection."""
    mine, peer = socket.socketpair()
    with mine, peer:
        context = ssl.create_default_context()
        started = time.monotonic()
        with pytest.raises(DeadlinePassed), within(SHORT):
            watch(mine)
            context.wrap_socket(mine, server_hostname="shop.test")  # the peer never answers
        assert time.monotonic() - started < SHORT + 2


def test_a_forked_process_has_a_watchdog_of_its_own():
    """gunicorn forks workers: a deadline in the child must still fire."""
    with within(SHORT):  # the parent's watchdog thread runs
        pass
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's exit code is the assertion)
        code = 1
        try:
            mine, _peer = socket.socketpair()  # the peer never writes
            try:
                with within(SHORT):
                    watch(mine)
                    mine.recv(1)
            except DeadlinePassed:
                code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(child, 9)
    os.waitpid(child, 0)
    pytest.fail("the child's read was still waiting after 5 s")


def test_a_socket_that_takes_the_number_of_a_closed_one_is_watched_in_its_own_right():
    """A retry's new connection may get the number of the one it replaces: the deadline shuts
    the new connection down, not only the closed one's."""
    old, old_peer = socket.socketpair()
    number = old.fileno()
    started = time.monotonic()
    with old_peer, pytest.raises(DeadlinePassed), within(SHORT):
        watch(old)
        old.close()
        new, new_peer = socket.socketpair()
        with new, new_peer:
            assert number in (new.fileno(), new_peer.fileno())  # the number was taken again
            watched = new if new.fileno() == number else new_peer
            watched.settimeout(SHORT + 3)
            watch(watched)
            watched.recv(1)  # its peer never writes
    assert time.monotonic() - started < SHORT + 1.5

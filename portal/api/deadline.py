"""A total deadline for a conversation with another server: connecting and the whole answer.

Socket timeouts (those of requests, urllib3 and smtplib) bound each read, not the answer: a
server that sends one header line every few seconds keeps a thread as long as it likes. Within
`within(seconds)`, every socket a connection class hands to `watch` is shut down when the
deadline passes, which ends whatever read or write waits on it; `within` then raises
`DeadlinePassed` (a `TimeoutError`) whatever the library made of the closed socket.

One watchdog thread per process keeps every deadline; a call that ends in time costs a `dup` of
its socket and a heap entry, not a thread. DNS resolution cannot be interrupted: it keeps the
resolver's own timeouts.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar


class DeadlinePassed(TimeoutError):
    """The conversation did not end within its deadline (an OSError, as socket timeouts are)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no complete answer within {seconds:g} s")
        self.seconds = seconds


class Deadline:
    """When a conversation must be over, and the sockets it uses.

    Each watched socket is kept as a duplicate of its descriptor, by the descriptor's number:
    TLS takes over the original socket object (`ssl.wrap_socket` detaches it, keeping the number)
    while the duplicate still reaches the same connection, and the duplicate's number cannot be
    given to another file before `release` or `end` closes it.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expires = time.monotonic() + seconds
        self._sockets: dict[int, socket.socket] = {}
        self._fired = False
        self._lock = threading.Lock()

    @property
    def passed(self) -> bool:
        return self._fired or time.monotonic() >= self.expires

    @property
    def fired(self) -> bool:
        """Whether the watchdog shut the sockets down (not only whether the time is over)."""
        return self._fired

    def remaining(self) -> float:
        return self.expires - time.monotonic()

    def watch(self, sock: socket.socket) -> None:
        """Shut `sock`'s connection down when the deadline passes (at once if it has)."""
        number = sock.fileno()
        duplicate = socket.socket(fileno=os.dup(number))
        with self._lock:
            # A number watched before belongs to this socket used again, or to a closed one
            # whose number it took: either way the new duplicate replaces the old.
            previous = self._sockets.pop(number, None)
            self._sockets[number] = duplicate
            if self._fired:
                _shut_down(duplicate)
        if previous is not None:
            previous.close()

    def release(self, sock: socket.socket) -> None:
        """Leave `sock` alone from now on: its conversation is over, and another call may take
        its connection from the pool before this deadline ends."""
        with self._lock:
            duplicate = self._sockets.pop(sock.fileno(), None)
        if duplicate is not None:
            duplicate.close()

    def fire(self) -> None:
        with self._lock:
            self._fired = True
            for duplicate in self._sockets.values():
                _shut_down(duplicate)

    def end(self) -> None:
        """The conversation is over: nothing is shut down any more, the duplicates are closed."""
        with self._lock:
            sockets, self._sockets = list(self._sockets.values()), {}
        for duplicate in sockets:
            duplicate.close()


def _shut_down(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # the connection may be closed already
        sock.shutdown(socket.SHUT_RDWR)


class _Watchdog:
    """The thread that fires deadlines, earliest first; deadlines that ended are dropped when
    their time comes."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()  # ties never compare deadlines
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def keep(self, deadline: Deadline) -> None:
        with self._changed:
            heapq.heappush(self._due, (deadline.expires, next(self._order), deadline))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="deadlines", daemon=True)
                self._thread.start()
            if self._due[0][2] is deadline:  # the watchdog sleeps until a later one
                self._changed.notify()

    def _run(self) -> None:
        with self._changed:
            while True:
                now = time.monotonic()
                while self._due and self._due[0][0] <= now:
                    heapq.heappop(self._due)[2].fire()
                self._changed.wait(self._due[0][0] - now if self._due else None)


_watchdog = _Watchdog()
_current: ContextVar[Deadline | None] = ContextVar("deadline", default=None)


def _new_watchdog_after_fork() -> None:
    """A forked process (a gunicorn worker) has no watchdog thread: it starts its own."""
    global _watchdog
    _watchdog = _Watchdog()


os.register_at_fork(after_in_child=_new_watchdog_after_fork)


@contextlib.contextmanager
def within(seconds: float) -> Iterator[Deadline]:
    """Run the block under a deadline of `seconds`: sockets handed to `watch` meanwhile are
    shut down when it passes, and the block then raises `DeadlinePassed`, also when it ended
    without an exception once they were (an answer cut short by the shutdown is not an answer;
    one read whole just as the time ran out is)."""
    deadline = Deadline(seconds)
    _watchdog.keep(deadline)
    token = _current.set(deadline)
    try:
        yield deadline
    except Exception as failure:
        if deadline.passed:
            raise DeadlinePassed(seconds) from failure
        raise
    finally:
        _current.reset(token)
        deadline.end()
    if deadline.fired:
        raise DeadlinePassed(seconds)


def watch(sock: socket.socket) -> None:
    """Put `sock` under this thread's deadline, if a `within` block runs; connection classes
    call it for each socket they open or use again."""
    deadline = _current.get()
    if deadline is not None:
        deadline.watch(sock)


def passed() -> bool:
    """Whether this thread's deadline, if a `within` block runs, has passed: nothing more is
    tried under it (a retry would open a connection only to have it shut down)."""
    deadline = _current.get()
    return deadline is not None and deadline.passed


def release(sock: socket.socket) -> None:
    """Take `sock` from under this thread's deadline (a connection going back to its pool)."""
    deadline = _current.get()
    if deadline is not None:
        deadline.release(sock)


def connect_timeout(timeout: float | None) -> float | None:
    """`timeout` for a connection attempt, cut to what is left of this thread's deadline."""
    deadline = _current.get()
    if deadline is None:
        return timeout
    left = max(deadline.remaining(), 0.001)  # 0 would make the socket non-blocking
    return left if timeout is None else min(timeout, left)

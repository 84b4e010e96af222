"""The worker's process is stopping (SIGTERM, SIGINT; `GracefulConsumer.stop`): one flag that
every pass claiming work reads, so that no pass can be left out when the worker stops. Syncs
end after their current page, delivery turns after their POST under way, and the passes that
send money claim nothing more (a process that stops before an answer leaves what it sent
`sending`)."""

from __future__ import annotations

import threading

_requested = threading.Event()


def request() -> None:
    """Ask every pass under way to end after the step it is in, and claim nothing more."""
    _requested.set()


def requested() -> bool:
    """Whether the worker is stopping (`request`)."""
    return _requested.is_set()

"""Waiting for something another process does in its own time, without a fixed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], timeout: float = 10.0, interval: float = 0.05) -> T:
    """Call `condition` until it returns something truthy, and return that; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, f"still {result!r} after {timeout} s"
        time.sleep(interval)
    return result

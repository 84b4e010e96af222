"""Attempts at a secret (a password, a two-factor code), counted before the secret is checked.

An attempt is counted first, with one atomic increment per limit (`INCRBY` in Redis, a lock in
memory), and checked only when no limit was over: so N parallel guesses check at most the limit's
number, on any number of processes. An attempt that turns out right, or that is refused
unchecked, is given back, so that only wrong guesses stay counted.

The counters are fixed windows in `PORTAL_RATELIMIT_STORAGE_URI` (the limiter's store). When that
store is unreachable they are kept in this process's memory, with a warning in the log, and the
store is tried again after `RETRY_SECONDS`: signing in keeps working, limited per process.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from flask import Flask, current_app
from limits import RateLimitItem, parse
from limits.errors import StorageError
from limits.storage import MemoryStorage, Storage, storage_from_string

RETRY_SECONDS = 30.0
# A limit (`"5 per 15 minutes"` parsed) and whom it counts: the parts of its counter's key.
Limit = tuple[RateLimitItem, tuple[str, ...]]


class LimitStore:
    """The counters' store of one application, with its in-memory stand-in."""

    def __init__(self, app: Flask) -> None:
        config = app.config
        self.logger = app.logger
        main = storage_from_string(
            config["RATELIMIT_STORAGE_URI"],
            **{**config.get("RATELIMIT_STORAGE_OPTIONS", {}), "wrap_exceptions": True},
        )
        assert isinstance(main, Storage)  # Flask-Limiter takes synchronous stores only
        self.main = main
        # A store in memory is never unreachable: it is its own stand-in (each MemoryStorage
        # starts a thread, 0.17 ms of CPU, for every application the tests make).
        self.memory = main if isinstance(main, MemoryStorage) else MemoryStorage()
        self.unreachable_since: float | None = None
        self.checked_at = -RETRY_SECONDS  # never

    def count(self, key: str, expiry: int) -> tuple[Storage, int]:
        """Add one to the counter; returns the store that counted it and the new value."""
        return self._reachable(lambda storage: storage.incr(key, expiry))

    def value(self, key: str) -> int:
        """The counter's value now (0 when it ran out or never was)."""
        return self._reachable(lambda storage: storage.get(key))[1]

    def _reachable(self, use: Callable[[Storage], int]) -> tuple[Storage, int]:
        """`use` of the configured store, or of the memory while that store is unreachable."""
        down = self.unreachable_since
        if down is None or time.monotonic() - down > RETRY_SECONDS:
            try:
                value = use(self.main)
            except StorageError as error:
                if self.unreachable_since is None:
                    self.logger.warning(
                        "Limit store unreachable (%s): counting attempts in memory", error
                    )
                self.unreachable_since = time.monotonic()
            else:
                if down is not None:
                    self.logger.warning("Limit store reachable again")
                    self.unreachable_since = None
                return self.main, value
        return self.memory, use(self.memory)

    def healthy(self) -> bool:
        """Whether the configured store answered when last asked.

        Asked at most every RETRY_SECONDS (a store that hangs costs its timeout), so a health
        check probing often stays fast.
        """
        now = time.monotonic()
        if now - self.checked_at > RETRY_SECONDS:
            self.checked_at = now
            reachable = self.main.check()
            if reachable != (self.unreachable_since is None):
                self.logger.warning(
                    "Limit store %s", "reachable again" if reachable else "unreachable"
                )
            self.unreachable_since = None if reachable else now
        return self.unreachable_since is None


def init_app(app: Flask) -> None:
    app.extensions["limit_store"] = LimitStore(app)


def store() -> LimitStore:
    return current_app.extensions["limit_store"]


@dataclass
class Attempt:
    """One counted attempt: the counters it added to, to give back if it was no wrong guess."""

    counted: list[tuple[Storage, str, int]] = field(default_factory=list)

    def give_back(self) -> None:
        # When the store went away meanwhile, the attempt stays counted: the safe side.
        for storage, key, expiry in self.counted:
            with contextlib.suppress(StorageError):
                storage.incr(key, expiry, -1)
        self.counted.clear()


def limit(value: str, *who: str) -> Limit:
    """A limit (`"5 per 15 minutes"`) and whom it counts, under the configured key prefix."""
    return parse(value), (current_app.config.get("RATELIMIT_KEY_PREFIX") or "", *who)


def attempt(limits: Sequence[Limit]) -> Attempt | None:
    """Count one attempt under every limit; None (nothing counted) when one is over it.

    None means: do not check the secret. Nothing is counted when limits are off
    (`RATELIMIT_ENABLED = False`).
    """
    counted = Attempt()
    if not current_app.config.get("RATELIMIT_ENABLED", True):
        return counted
    for item, who in limits:
        key, expiry = item.key_for(*who), item.get_expiry()
        storage, value = store().count(key, expiry)
        counted.counted.append((storage, key, expiry))
        if value > item.amount:
            counted.give_back()
            return None
    return counted

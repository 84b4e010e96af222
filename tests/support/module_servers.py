"""Servers started once for a test module and stopped after its last test: the
`module_servers` fixture (tests/conftest.py) hands a module's fixtures this factory, so that each
says in one line what it starts instead of copying the start and the stop."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
from flask import Flask

from tests.support.portal_app import connected_portal
from tests.support.portal_server import PortalServer, run_portal
from tests.support.sandbox_server import SandboxServer, run_sandbox


class ModuleServers:
    """Sandboxes and portals of one test module, each in a folder of its own."""

    def __init__(self, module_name: str, folders: pytest.TempPathFactory) -> None:
        self._name = re.sub(r"^test_", "", module_name.rsplit(".", 1)[-1])
        self._folders = folders
        self._running = contextlib.ExitStack()

    def _folder(self, kind: str) -> Path:
        return self._folders.mktemp(f"{self._name}-{kind}")

    def sandbox(self, *, seed: int = 0) -> SandboxServer:
        """A sandbox process on a database of its own, `seed` operations in it."""
        return self._running.enter_context(
            run_sandbox(self._folder("sandbox") / "sandbox.db", seed=seed)
        )

    def portal(self, sandbox: SandboxServer, **config: object) -> Flask:
        """A portal application, one user per role, connected to `sandbox`; `config` is
        added to the test configuration (`connected_portal`)."""
        return self._running.enter_context(
            connected_portal(self._folder("portal"), sandbox, **config)
        )

    def served_portal(self, sandbox: SandboxServer, **options) -> PortalServer:
        """The portal as a real process connected to `sandbox` (`run_portal`'s options)."""
        return self._running.enter_context(run_portal(self._folder("portal"), sandbox, **options))

    def close(self) -> None:
        self._running.close()

"""The Python the Makefile makes `.venv` with: the distribution's own where it can make one (an
optimised build, docs/development.md), else `python3` on the PATH, and always the one named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.sandbox_server import ROOT


def _chosen_python(*assignments: str) -> str:
    """What `make` takes for PYTHON with these variables set on its command line (and none
    from the environment or a `make test` this suite may run under)."""
    show = "--eval=chosen: ; @echo $(PYTHON)"
    shown = subprocess.run(
        ["make", "-s", "--no-print-directory", *assignments, show, "chosen"],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k not in ("PYTHON", "MAKEFLAGS", "MFLAGS")},
        capture_output=True,
        text=True,
        check=True,
    )
    return shown.stdout.strip()


def _interpreter(path: Path, body: str) -> str:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_the_distributions_python_makes_the_virtualenv_when_it_can(tmp_path):
    """A distribution's Python of 3.11 or newer, with venv's ensurepip, is taken."""
    distribution = _interpreter(tmp_path / "python3", f'exec {sys.executable} "$@"')
    assert _chosen_python(f"DISTRIBUTION_PYTHON={distribution}") == distribution


def test_without_a_distribution_python_that_can_the_one_on_the_path_does(tmp_path):
    """Missing, too old or without ensurepip (Debian's without python3-venv): `python3`."""
    too_old = _interpreter(
        tmp_path / "python3.10", f'exec {sys.executable} -c "import sys; sys.exit(1)"'
    )
    without_ensurepip = _interpreter(
        tmp_path / "python3", f'exec {sys.executable} -c "import ensurepip_missing"'
    )
    for distribution in (str(tmp_path / "absent"), too_old, without_ensurepip):
        assert _chosen_python(f"DISTRIBUTION_PYTHON={distribution}") == "python3", distribution


def test_a_python_named_on_the_command_line_is_the_one(tmp_path):
    distribution = _interpreter(tmp_path / "python3", f'exec {sys.executable} "$@"')
    chosen = _chosen_python(f"DISTRIBUTION_PYTHON={distribution}", "PYTHON=python3.12")
    assert chosen == "python3.12"

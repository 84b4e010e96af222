"""Where PORTAL_TEST_REQUIRE names a tool or service (as `.ci/run` does), its absence fails:
the tests that need it, and `make libreoffice`. Elsewhere they are skipped, with a warning."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.support.required import skip_unless
from tests.support.sandbox_server import ROOT

MISSING = "LibreOffice (soffice) is missing"


def _outcome(available: bool) -> tuple[str, str]:
    """What `skip_unless` does for soffice: ("pass", ""), or ("fail"|"skip", its words)."""
    try:
        skip_unless(available, "soffice", MISSING)
    except pytest.fail.Exception as failure:
        return "fail", str(failure)
    except pytest.skip.Exception as skip:
        return "skip", str(skip)
    return "pass", ""


def test_a_missing_tool_fails_where_required_and_is_skipped_elsewhere(monkeypatch):
    monkeypatch.setenv("PORTAL_TEST_REQUIRE", "postgresql, soffice")
    assert _outcome(False) == ("fail", f"{MISSING}, and PORTAL_TEST_REQUIRE requires soffice")
    assert _outcome(True) == ("pass", "")
    monkeypatch.setenv("PORTAL_TEST_REQUIRE", "postgresql")
    assert _outcome(False) == ("skip", f"{MISSING}: skipped")


def test_make_libreoffice_fails_where_required_when_it_cannot_install(tmp_path):
    """With a PATH that has neither soffice nor apt-get, as on a machine that cannot install."""
    for tool in ("make", "sh", "id", "tr", "grep"):
        (tmp_path / tool).symlink_to(shutil.which(tool))

    def make(require: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["make", "-s", "libreoffice"],
            cwd=ROOT, env={"PATH": str(tmp_path), "PORTAL_TEST_REQUIRE": require},
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip

    required = make("soffice,postgresql,redis")
    assert required.returncode != 0
    assert "PORTAL_TEST_REQUIRE requires it" in required.stderr
    elsewhere = make("")
    assert elsewhere.returncode == 0
    assert "its tests are skipped" in elsewhere.stderr

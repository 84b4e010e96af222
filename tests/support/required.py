"""What the suite needs from the machine. A test whose tool or service is missing is skipped,
except where PORTAL_TEST_REQUIRE (comma separated: `soffice`, `postgresql`, `redis`) names it:
there, as in CI (`.ci/run`), it fails, so that a machine that could not install it cannot pass
by skipping."""

from __future__ import annotations

import os

import pytest

REQUIRE = "PORTAL_TEST_REQUIRE"


def required(name: str) -> bool:
    return name in {part.strip() for part in os.environ.get(REQUIRE, "").split(",")}


def skip_unless(available: bool, name: str, missing: str) -> None:
    """Go on when `available`; otherwise skip, saying what is `missing`, or fail when required."""
    if available:
        return
    if required(name):
        pytest.fail(f"{missing}, and {REQUIRE} requires {name}", pytrace=False)
    pytest.skip(f"{missing}: skipped")


# PORTAL_TEST_THOROUGH=1 (`make test-thorough`): the generating tests (Schemathesis, Hypothesis)
# try more requests and inputs than `make test` does, for a change to the API document, the
# sandbox or the forms.
THOROUGH = os.environ.get("PORTAL_TEST_THOROUGH") == "1"

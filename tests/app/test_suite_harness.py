"""The suite's own machinery, which the other tests rely on without saying so: the `browser`
marker that `make test-fast` leaves out, the session the browser tests sign in with once, the
factories of the portal's rows, the URL builders the applications of one test process share,
the PostgreSQL schema its tests share emptied, and the processes forked ready to run."""

from __future__ import annotations

import itertools
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa
from flask import url_for
from playwright.sync_api import Browser, expect
from werkzeug.exceptions import HTTPException
from werkzeug.routing import BaseConverter, BuildError, Map, Rule, ValidationError
from werkzeug.routing.converters import IntegerConverter, PathConverter

from tests.support import factories
from tests.support.browser import signed_in_as
from tests.support.databases import emptied_postgres_schema
from tests.support.forms import sign_in
from tests.support.mirror_rows import mirror, operation_record, operation_totals_of
from tests.support.portal_app import WERKZEUG_COMPILE, ready_portal
from tests.support.portal_server import PortalServer
from tests.support.processes import start_python
from tests.support.sandbox_server import ROOT


@pytest.mark.slow  # a pytest process of its own
def test_a_test_that_drives_chromium_is_marked_browser_wherever_it_lives():
    """`-m "not browser"` (make test-fast) collects none of the tests that ask for Chromium,
    though nothing in their modules marks them."""
    modules = ["tests/identity/test_sign_in_browser.py", "tests/money/test_money_pages_browser.py"]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-p", "no:xdist",
         "-p", "no:cacheprovider", "-m", "not browser", *modules],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    ).stdout  # fmt: skip
    deselected = re.search(r"no tests collected \((\d+) deselected\)", collected)
    assert deselected is not None and int(deselected.group(1)) > 5, collected


def test_a_browser_test_signs_in_once_then_reuses_the_session_until_it_ends(
    browser: Browser, portal: PortalServer
) -> None:
    """`signed_in_as` posts the sign-in form for a portal and user once, then opens pages in a
    fresh context with that session's cookies; once the session is signed out, it signs in
    again."""
    email = portal.add_user("reused-session@acme.test", "operator")
    sign_ins: list[str] = []

    def open_account(*, then_sign_out: bool = False) -> None:
        context = browser.new_context(base_url=portal.url)
        page = context.new_page()
        page.on(
            "request",
            lambda sent: (
                sent.method == "POST"
                and urlsplit(sent.url).path == "/login"
                and sign_ins.append(sent.url)
            ),
        )
        signed_in_as(page, email, "/account")
        expect(page.get_by_role("heading", name="Account", exact=True)).to_be_visible()
        if then_sign_out:
            page.get_by_role("button", name="Sign out").click()
            expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        context.close()

    open_account()
    assert len(sign_ins) == 1
    open_account(then_sign_out=True)
    assert len(sign_ins) == 1, "the session was not reused"
    open_account()
    assert len(sign_ins) == 2, "a signed-out session was reused"


def test_a_user_from_the_factory_signs_in_with_the_test_password_and_a_code(app):
    made = factories.user(app, "ops@acme.test", "operator", two_factor=True)
    answer = sign_in(app.test_client(), "ops@acme.test")
    assert answer.status_code == 302
    assert answer.location.endswith("/login/two-factor"), "asked for a code next"
    assert made.email == "ops@acme.test" and made.totp_secret


def test_an_unchecked_address_is_stored_as_it_is(app):
    """As a user stored before addresses were checked: no form takes this address today."""
    from portal.identity.rules.accounts import find_user

    factories.user(app, "x@a.example,other@b.example", "owner", checked=False)
    with app.app_context():
        assert find_user("x@a.example,other@b.example") is not None


# --- URL rules compiled once per process (tests/support/portal_app.py `_CompiledRules`) -------


class _EvenInteger(IntegerConverter):
    """An `int` converter of another kind: a map naming it must not share the compilation of
    maps whose `int` is werkzeug's."""

    def to_python(self, value: str) -> int:
        number = super().to_python(value)
        if number % 2:
            raise ValidationError
        return number


def _rules(year: int = 2026) -> list[Rule]:
    """Rules with converters and their arguments, defaults and slashes to merge."""
    return [
        Rule("/pages/<int(min=1):page>", endpoint="pages"),
        Rule("/files/<path:name>", endpoint="files"),
        Rule("/lang/<any(en, es):lang>/<slug>", endpoint="lang"),
        Rule("/list/", defaults={"page": 1}, endpoint="list"),
        Rule("/list/page/<int:page>", endpoint="list"),
        Rule("/years/<int:year>/", defaults={"year": year}, endpoint="year"),
        Rule("/shops//<shop>", endpoint="shop", methods=["GET", "POST"]),
    ]


_PATHS = [
    "/pages/3", "/pages/0", "/pages/4", "/files/a/b c.txt", "/lang/es/x y", "/lang/fr/x",
    "/list/", "/list", "/list/page/2", "/list/page/1", "/years/2026/", "/years/2025/",
    "/shops/acme", "/shops//acme", "/nowhere",
]  # fmt: skip
_BUILDS = [
    ("pages", {"page": 3}), ("files", {"name": "a/b c.txt"}),
    ("lang", {"lang": "en", "slug": "a b"}), ("list", {}), ("list", {"page": 2}),
    ("list", {"page": 1, "q": "x"}), ("year", {}), ("year", {"year": 2026, "q": "y"}),
    ("shop", {"shop": "a/b"}),
]  # fmt: skip


def _routing(url_map: Map, paths: list[str], builds: list[tuple[str, dict]]) -> list:
    """What `url_map` answers for each path (GET and POST) and builds for each endpoint."""
    adapter = url_map.bind("portal.test")
    answers: list = []
    for path, method in itertools.product(paths, ["GET", "POST"]):
        try:
            answers.append(adapter.match(path, method))
        except HTTPException as refused:
            answers.append((type(refused), getattr(refused, "new_url", None)))
    for endpoint, values in builds:
        try:
            answers.append(adapter.build(endpoint, values))
        except BuildError as refused:
            answers.append(str(refused))
    return answers


def _compiled_as_werkzeug_does(build: Callable[[], Any]) -> Any:
    """What `build` makes with werkzeug compiling each rule itself."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Rule, "compile", WERKZEUG_COMPILE)
        return build()


def test_maps_sharing_compiled_rules_route_as_a_map_that_compiled_its_own():
    own = _compiled_as_werkzeug_does(lambda: Map(_rules()))
    first, second = Map(_rules()), Map(_rules())
    expected = _routing(own, _PATHS, _BUILDS)
    assert _routing(first, _PATHS, _BUILDS) == expected
    assert _routing(second, _PATHS, _BUILDS) == expected
    for rule, twin in zip(first.iter_rules(), second.iter_rules(), strict=True):
        assert rule._build.__func__ is twin._build.__func__, f"{rule.rule} compiled once"
        assert twin.arguments == rule.arguments, rule.rule
        for name, converter in twin._converters.items():
            original = rule._converters[name]
            assert converter.map is second and type(converter) is type(original)
            assert {**vars(converter), "map": None} == {**vars(original), "map": None}


@pytest.mark.parametrize(
    "differing",
    [
        pytest.param(lambda: Map(_rules(), converters={"int": _EvenInteger}), id="converters"),
        pytest.param(lambda: Map(_rules(year=2025)), id="defaults"),
        pytest.param(lambda: Map(_rules(), merge_slashes=False), id="slashes"),
        pytest.param(lambda: Map(_rules(), default_subdomain="www"), id="subdomain"),
    ],
)
def test_a_map_that_differs_compiles_its_rules_itself(differing: Callable[[], Map]):
    usual = _routing(Map(_rules()), _PATHS, _BUILDS)
    shared = _routing(differing(), _PATHS, _BUILDS)
    assert shared == _routing(_compiled_as_werkzeug_does(differing), _PATHS, _BUILDS)
    assert shared != usual


def _sample(converter: BaseConverter) -> object:
    """A value the converter takes."""
    return {IntegerConverter: 7, PathConverter: "a/b c.txt"}.get(type(converter), "a b")


def _portal_routing(application) -> list:
    """Every rule of the portal built with sample values and matched back, with its parts."""
    rules = sorted(application.url_map.iter_rules(), key=lambda rule: (rule.rule, rule.endpoint))
    builds = [
        (rule.endpoint, {name: _sample(c) for name, c in rule._converters.items()})
        for rule in rules
    ]
    adapter = application.url_map.bind("portal.test")
    paths = [rule.rule for rule in rules] + [adapter.build(*build) for build in builds]
    parts = [(rule._parts, rule._trace, sorted(rule.arguments)) for rule in rules]
    return [*parts, *_routing(application.url_map, paths, builds)]


def test_portals_sharing_compiled_rules_route_every_url_as_one_that_compiled_its_own(
    app, portal_config, tmp_path
):
    from portal import create_app

    def portal(name: str):
        return create_app({**portal_config, "DATABASE_URL": f"sqlite:///{tmp_path / name}"})

    own = _compiled_as_werkzeug_does(lambda: portal("own.db"))
    other = portal("other.db")
    expected = _portal_routing(own)
    assert _portal_routing(app) == expected
    assert _portal_routing(other) == expected
    with app.test_request_context():
        assert url_for("withdrawals.show", key="a b") == "/withdrawals/a%20b"


# --- The worker's PostgreSQL schema, emptied for each test ------------------------------------


@pytest.fixture
def on_the_worker_schema(portal_config, postgres_url) -> str:
    portal_config["DATABASE_URL"] = postgres_url
    return postgres_url


def test_the_next_test_on_the_worker_schema_finds_no_row_and_ids_from_1(
    on_the_worker_schema, app, portal_config
):
    """Whatever a test stored, or left in a transaction still open, the next one sees none of it,
    and its first rows get the ids a fresh schema gives. Mirrored operations among them: their
    triggers keep the operations' totals, and run as they are emptied."""
    from portal import create_app
    from portal.extensions import db
    from portal.identity.models import Merchant, User
    from portal.payments.models import OperationTotal

    made = factories.accounts(app)
    assert factories.user(app, "fifth@acme.test", "operator").id == 5
    mirror(app, operation_record())
    assert operation_totals_of(app), "the operation is counted"
    left_open = sa.create_engine(on_the_worker_schema).connect()
    left_open.execute(sa.select(User.id).with_for_update())  # every row locked, not released

    assert emptied_postgres_schema() == on_the_worker_schema, "the same schema, not a new one"
    following = ready_portal(create_app(portal_config))
    assert factories.user(following, made.owner, "owner").id == 1
    with following.app_context():
        assert db.session.scalars(sa.select(User.email)).all() == [made.owner]
        assert db.session.scalars(sa.select(Merchant.id)).all() == [1]
        assert db.session.scalars(sa.select(OperationTotal.id)).all() == []
        db.engine.dispose()
    with pytest.raises(sa.exc.OperationalError):
        left_open.execute(sa.select(1))  # its connection was ended


def test_a_test_that_moves_the_migrations_leaves_the_next_a_schema_at_their_head(
    on_the_worker_schema, app
):
    import flask_migrate

    from portal.extensions import db

    with app.app_context():
        head = db.session.scalar(sa.text("SELECT version_num FROM alembic_version"))
        db.session.remove()
        flask_migrate.downgrade(revision="base")
        db.engine.dispose()

    following = sa.create_engine(emptied_postgres_schema())
    with following.connect() as connection:
        assert connection.scalar(sa.text("SELECT version_num FROM alembic_version")) == head
        assert connection.scalar(sa.text("SELECT count(*) FROM users")) == 0
    following.dispose()


def test_a_forked_python_process_runs_as_python_would(tmp_path):
    """`start_python` gives the forked process its own arguments, environment, working folder
    and output, and reports its exit code, or the signal that ended it, as Popen would."""
    script = (
        "import os, sys; print(sys.argv[1:], os.environ.get('ONLY'), os.environ.get('HOME'),"
        " os.getcwd(), __name__); sys.exit(3)"
    )
    log = tmp_path / "output.log"
    ran = start_python(["-c", script, "one"], env={"ONLY": "this"}, cwd=tmp_path, output=log)
    assert ran.wait(timeout=30) == 3
    assert log.read_text() == f"['one'] this None {tmp_path} __main__\n"

    waiting = start_python(["-m", "http.server", "0"], env={}, cwd=tmp_path, quiet=True)
    with pytest.raises(subprocess.TimeoutExpired):
        waiting.wait(timeout=0.2)
    assert waiting.poll() is None
    waiting.terminate()
    assert waiting.wait(timeout=30) == -signal.SIGTERM

"""Property-based tests of bad input: any query string, any form values.

Whatever is typed or put in a URL, the portal answers below 500 and without a traceback; a
form it refuses (422) says why next to a field, and the sandbox received nothing: no record,
no balance changed. CSRF is off so that the forms can be posted; it has its own tests.
"""

from __future__ import annotations

import sqlite3
from datetime import date
from urllib.parse import urlencode

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from werkzeug.exceptions import HTTPException

from portal.identity.models import Role
from tests.support import walks
from tests.support.databases import emptied_postgres_schema
from tests.support.forms import signed_in
from tests.support.htmx import HTMX
from tests.support.portal_app import connected_portal, email
from tests.support.required import THOROUGH
from tests.support.walks import HtmlField

# 10 examples per page and form in `make test`, 50 with PORTAL_TEST_THOROUGH=1 (docs/testing.md).
PROPERTY_SETTINGS = settings(
    max_examples=50 if THOROUGH else 10,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

# Property-based: hundreds of generated query strings and forms on two databases.
pytestmark = pytest.mark.slow
# A plain request; an htmx request for part of a page; a boosted link or form (the whole page).
PLAIN, BOOSTED = {}, {**HTMX, "HX-Boosted": "true"}
# The sandbox's records, and the wallets whose balances money-moving forms change.
UPSTREAM_TABLES = ("operations", "transactions", "vouchers", "exchanges", "cross_exchanges")

# Well-formed ETH (and USDT), Bitcoin bech32 and Bitcoin base58 addresses.
ADDRESS_EXAMPLES = (
    "0x52908400098527886E0F7030069857D2E4169EE7",
    "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
    "1BoatSLRHtKNngkdXEeobR76b53LETtpyT",
)
# Values that are nearly right, or wrong in a way plain random text seldom is.
PLAUSIBLE = (
    "0.5",
    "12",
    "0.00000001",
    "BTC",
    "ETH",
    "USDT",
    "USD",
    *ADDRESS_EXAMPLES,
    "ABCD-EFGH-IJKL-MNOP",
    "order-1",
    "https://shop.example/thanks",
    "2024-01-31",
    "asc",
    "desc",
    "amount",
    "created",
    "1",
    "10",
    "transactions",
    "local",
    "voucher.create",
    "owner@acme.test",
)
TRICKY = (
    "",
    " ",
    "0",
    "-1",
    "-0",
    "1e999",
    "1E+3",
    "NaN",
    "Infinity",
    "0x10",
    "\uff11\uff12",
    "٣",
    "1_000",
    "0.123456789",
    "999999999999999999999999999999",
    "2147483648",
    "9223372036854775808",
    "0001-01-01",
    "9999-12-31",
    "2024-02-30",
    "2024-13-01",
    ",,,",
    "a,,b, ,c",
    "btc,eth",
    "\x00",
    "\u202e",
    "\ufeff",
    "<script>alert(1)</script>",
    "' OR 1=1 --",
    "{{7*7}}",
    "%00",
    "../../etc/passwd",
    "javascript:alert(1)",
    "http://",
    "https:// x",
)
CONTROL = st.text(st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "Zl", "Zp"]))
LONG = st.builds(
    lambda piece, times: piece * times, st.text(min_size=1, max_size=4), st.integers(64, 3000)
)
VALUES = st.one_of(st.text(), st.sampled_from(PLAUSIBLE + TRICKY), CONTROL, LONG)
UNKNOWN = st.dictionaries(st.text(min_size=1, max_size=20), VALUES, max_size=3)

# Values aimed at a kind of field: its edges are where the bugs are.
INTEGERS = st.one_of(st.integers(), st.integers(2**31 - 2, 10**500)).map(str)
DATES = st.one_of(st.dates(), st.sampled_from([date.min, date.max])).map(date.isoformat)
NUMBERS = st.one_of(
    st.sampled_from(["", " ", "\t", "\u3000"]),  # blank: no number at all
    INTEGERS,
    st.integers(10**11, 10**40).map(str),
    st.decimals().map(str),
    st.decimals(places=8, min_value=0).map(lambda amount: format(amount, "f")),
)
ADDRESSES = st.sampled_from(ADDRESS_EXAMPLES)
EXTRAS = {  # query parameters that no form holds (a list's page, an export's options)
    "page": INTEGERS,
    "detail": st.just("transactions"),
    "bom": st.just("1"),
    "tz": st.just("local"),
}


def aimed_values(field: HtmlField) -> st.SearchStrategy[str]:
    """Values aimed at the field's kind as the page draws it (its choices, dates, numbers, a
    bound of a range); any text for the others."""
    if field.kind == "date":
        return DATES
    if field.kind == "number" or field.name.endswith(("_from", "_to")):
        return NUMBERS
    if field.kind == "choice":
        return st.sampled_from(field.choices or ("",))
    if field.name.endswith("address"):
        return ADDRESSES
    return VALUES


@st.composite
def spoiled(draw, fields: dict[str, st.SearchStrategy[str]]) -> dict[str, st.SearchStrategy[str]]:
    """The fields with their aimed values, but any text at all in up to two of them.

    Mostly well-formed input reaches the deep code (quotes, queries, the API); a spoiled
    field checks that one bad value among good ones is refused.
    """
    bad = draw(st.sets(st.sampled_from(sorted(fields)), max_size=2)) if fields else set()
    return {name: VALUES if name in bad else values for name, values in fields.items()}


# Every page the owner may open (of every registered feature, tests/support/walks.py) takes any
# query string, and so does every export; the fields are those of the forms the page draws.
SITE = walks.site()
PAGES = [route.rule for route in walks.pages(SITE, Role.OWNER) if not route.needs_a_record]
EXPORTS = [rule.rule for rule in walks.feature_routes(SITE) if rule.rule.endswith(walks.FILES)]
# The forms posted: each form of a page, of the features that move money or read the API, that
# posts to the page itself (or, as the exchange, whose page asks for a review first). The
# account, settings and sign-in forms change who signs in and where the API is: their own tests
# post them.
NOT_POSTED = frozenset({"account", "settings", "auth"})
FORMS = [
    rule.rule
    for rule in walks.feature_routes(SITE)
    if "POST" in (rule.methods or ())
    and rule.rule in PAGES
    and rule.endpoint.split(".")[0] not in NOT_POSTED
]
# Inputs that once gave a 500, tried on every run: a page number beyond SQLite's integers or
# beyond floats, the last day there is (no day after it), an amount whose quote needs more
# than 28 digits.
HUGE = "9" * 40
BEYOND_FLOATS = "9" * 400
EDGE_QUERIES = {
    "/operations": [f"page={BEYOND_FLOATS}"],
    "/transactions/export.csv": [f"page={BEYOND_FLOATS}"],
    "/withdrawals": [f"page={HUGE}", f"page={BEYOND_FLOATS}"],
    "/cross-exchanges": [f"page={HUGE}"],
    "/exchange/made": [f"page={HUGE}", f"page={BEYOND_FLOATS}"],
    "/audit": [f"page={HUGE}", "date_to=9999-12-31", "user=owner%00@acme.test"],
    "/audit/export.csv": ["date_to=9999-12-31"],
    "/exchange": [
        f"sell_currency=BTC&buy_currency=USDT&sell_amount={HUGE}",
        f"sell_currency=USDT&buy_currency=BTC&buy_amount={HUGE}",
    ],
    "/exchange/review": [
        f"sell_currency=BTC&buy_currency=USDT&sell_amount={HUGE}&intent={'k' * 32}",
        f"sell_currency=USDT&buy_currency=BTC&buy_amount={HUGE}&intent={'k' * 32}",
    ],
}
# An amount of only spaces passed InputRequired as if it were an amount; a NUL byte in an order
# number created the operation upstream before PostgreSQL refused to store it.
EDGE_FORMS = {
    "/operations/new": [{"amount": "1", "currency": "BTC", "order_id": "A-1\x00B"}],
    "/vouchers/new": [{"amount": " ", "currency": "BTC"}],
    "/withdrawals/new": [{"amount": "\u3000", "wallet": "BTC", "address": ADDRESS_EXAMPLES[1]}],
}


@pytest.fixture(scope="module")
def sandbox(module_sandbox):
    return module_sandbox


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def app(request, tmp_path_factory, sandbox):
    """The portal on SQLite, and on PostgreSQL (which cannot store a NUL byte in text)."""
    folder = tmp_path_factory.mktemp("bad-input-portal")
    database = {}
    if request.param == "postgresql":
        # The worker's schema: pytest ends this fixture before a test of another module runs.
        database["DATABASE_URL"] = emptied_postgres_schema()
    with connected_portal(folder, sandbox, WTF_CSRF_ENABLED=False, **database) as application:
        yield application


@pytest.fixture(scope="module")
def owner(app):
    """The owner may open every page and post every form."""
    return signed_in(app, email("owner"))


def field_values(client, path: str, *, method: str) -> dict[str, st.SearchStrategy[str]]:
    """Every field of the forms the page at `path` draws that its own feature answers (for an
    export, its list page's), with the values to try in it; `method` "get" also adds the
    query parameters no form holds."""
    page = path.rsplit("/", 1)[0] if path.endswith(walks.FILES) else path
    feature = SITE.url_map.bind("portal.test").match(page)[0].split(".")[0]
    html = client.get(page).get_data(as_text=True)
    fields = {
        field.name: aimed_values(field)
        for form in walks.forms_on(html, page)
        if form.action != "/search" and _feature_of(form.action) == feature
        for field in form.fields
        if field.name != "csrf_token"
    }
    return {**fields, **EXTRAS} if method == "get" else fields


def _feature_of(path: str) -> str | None:
    try:
        return SITE.url_map.bind("portal.test").match(path, method="GET")[0].split(".")[0]
    except HTTPException:
        return None


def upstream_state(app, sandbox) -> dict[str, object]:
    """Every record the sandbox holds, the wallets' balances, and the portal's pending intents."""
    from portal.extensions import db
    from portal.money.models import WithdrawalIntent

    with sqlite3.connect(f"file:{sandbox.database}?mode=ro", uri=True) as connection:
        state: dict[str, object] = {
            table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608
            for table in UPSTREAM_TABLES
        }
        state["wallets"] = connection.execute(
            "SELECT currency, balance FROM wallets ORDER BY currency"
        ).fetchall()
    connection.close()
    with app.app_context():
        state["withdrawal_intents"] = db.session.scalar(
            sa.select(sa.func.count()).select_from(WithdrawalIntent)
        )
    return state


def assert_answered(client, response) -> str:
    """Below 500 and no traceback; a redirect is followed (it must answer too) to use its flash.
    A workbook's bytes are read as text as far as they go."""
    body = response.get_data().decode(errors="replace")
    assert response.status_code < 500, body[:2000]
    assert "Traceback" not in body
    if response.status_code in (302, 303):
        followed = client.get(response.location)
        assert followed.status_code < 500, followed.get_data(as_text=True)[:2000]
    return body


def shows_a_problem(html: str) -> bool:
    """A message next to a field, or an alert above the form that says what to correct, or
    the page that names the field holding a control character (refused before any form)."""
    return (
        '<ul class="errors"' in html
        or 'class="form-error" role="alert"' in html
        or "holds a control character (such as a NUL byte)" in html
    )


@st.composite
def query_strings(draw, fields: dict[str, st.SearchStrategy[str]]) -> str:
    """Most of the known parameters (some repeated) and a few unknown ones, in any order."""
    pairs = []
    for name, values in draw(spoiled(fields)).items():
        count = draw(st.sampled_from([0, 1, 1, 1, 1, 2]))
        pairs.extend(
            (name, value) for value in draw(st.lists(values, min_size=count, max_size=count))
        )
    pairs.extend(draw(UNKNOWN).items())
    return urlencode(draw(st.permutations(pairs)))


def test_every_edge_case_has_its_page():
    assert EDGE_QUERIES.keys() <= {*PAGES, *EXPORTS}
    assert EDGE_FORMS.keys() <= set(FORMS)


@pytest.mark.parametrize("path", PAGES + EXPORTS)
def test_any_query_string_is_answered_without_an_error(app, owner, path):
    fields = field_values(owner, path, method="get")

    @PROPERTY_SETTINGS
    @given(query=query_strings(fields), headers=st.sampled_from([PLAIN, HTMX, BOOSTED]))
    def check(query, headers):
        response = owner.get(path, query_string=query, headers=headers)
        html = assert_answered(owner, response)
        if response.status_code == 422:
            assert shows_a_problem(html), html[:2000]

    for query in EDGE_QUERIES.get(path, ()):
        check = example(query=query, headers=PLAIN)(check)
    check()


@st.composite
def form_values(draw, fields: dict[str, st.SearchStrategy[str]]) -> dict[str, str]:
    """A value for most fields, none for some; plus a few fields the form does not know."""
    data = {}
    for name, values in draw(spoiled(fields)).items():
        if draw(st.sampled_from([True, True, True, False])):
            data[name] = draw(values)
    data.update({key: value for key, value in draw(UNKNOWN).items() if key not in data})
    return data


# The forms are posted as the page sends them: boosted by htmx, or plainly without JavaScript.
@pytest.mark.parametrize("path", FORMS)
def test_any_form_values_are_answered_and_refusals_send_nothing(app, sandbox, owner, path):
    fields = field_values(owner, path, method="post")

    @PROPERTY_SETTINGS
    @given(data=form_values(fields), headers=st.sampled_from([PLAIN, BOOSTED]))
    def check(data, headers):
        before = upstream_state(app, sandbox)
        response = owner.post(path, data=data, headers=headers)
        html = assert_answered(owner, response)
        if response.status_code == 422:
            assert shows_a_problem(html), html[:2000]
            assert upstream_state(app, sandbox) == before

    for data in EDGE_FORMS.get(path, ()):
        check = example(data=data, headers=PLAIN)(check)
    check()

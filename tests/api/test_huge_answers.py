"""A hostile API's huge answer costs the portal at most `PORTAL_API_MAX_ANSWER_BYTES` of reading:
it is a malformed answer (a 502 page), read no further, never parsed. A 40 MB `[{},{},…]` once
took a worker from 122 MB to 1.19 GB."""

from __future__ import annotations

import time
import tracemalloc
from types import SimpleNamespace

import pytest

from portal.api import ApiUnavailable, MerchantApiClient
from tests.support.dripping import Dripping, flooding, run_dripping
from tests.support.fake_api import Answer, FakeApi
from tests.support.forms import signed_in
from tests.support.portal_app import connected_portal, email

PING = Answer(200, {"data": {"status": "ok"}})
CHUNK = b"{}," * 20_000


def empty_objects(megabytes: int | None, headers: bytes = b"") -> Dripping:
    """`[{},{},…]` of about `megabytes` MB (without end for None), as fast as it is read."""
    times = None if megabytes is None else megabytes * 1_000_000 // len(CHUNK)
    return flooding(b"application/json", b"[", CHUNK, times=times, headers=headers)


@pytest.mark.parametrize(
    "length", [b"", b"Content-Length: 40000001\r\n"], ids=["streamed", "announced"]
)
def test_a_40_mb_answer_is_never_parsed_and_the_list_reads_the_mirror(tmp_path, length):
    """Streamed (the body counted as it comes) or announced (refused by its Content-Length):
    the list shows the portal's copy, read-only."""
    from portal.extensions import db
    from portal.settings.models import ApiConnection

    with FakeApi() as fake, run_dripping(empty_objects(40, length)) as flood:
        fake.answer("GET", "/sandbox/v1/ping", PING)
        upstream = SimpleNamespace(base_url=fake.base_url, token="hostile-api-token")
        with connected_portal(tmp_path, upstream) as app:
            with app.app_context():
                db.session.execute(db.update(ApiConnection).values(base_url=flood.url))
                db.session.commit()
            owner = signed_in(app, email("owner"))
            tracemalloc.start()
            try:
                page = owner.get("/operations")
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    assert page.status_code == 200
    assert 'id="read-only-banner"' in page.get_data(as_text=True)
    assert peak < 20_000_000  # parsing it took 1 GB


def test_an_answer_streamed_without_end_is_cut_at_the_limit_not_at_the_deadline():
    """No Content-Length to refuse at once: the body is counted as it comes, and the call ends
    at the limit, as a malformed answer rather than a timeout."""
    with run_dripping(empty_objects(None)) as api:
        client = MerchantApiClient(
            api.url, token="hostile-api-token", timeout=(1, 5), max_answer_bytes=1_000_000
        )
        started = time.monotonic()
        with pytest.raises(ApiUnavailable) as caught:
            client.list_operations()
    assert time.monotonic() - started < 3  # the deadline is 6 s
    assert (caught.value.timeout, caught.value.http_status) == (False, 200)
    assert "longer than 1000000 bytes" in caught.value.message


def test_an_answer_announced_over_the_limit_is_refused_before_its_body_is_read():
    """A Content-Length over the limit is enough: nothing of the body is waited for (here it
    would come a few bytes every half second)."""
    announced = Dripping(
        first=b"HTTP/1.1 200 OK\r\nContent-Length: 1000001\r\n\r\n[",
        drip=b"{},",
        trigger=b"",
    )
    with run_dripping(announced) as api:
        client = MerchantApiClient(
            api.url, token="hostile-api-token", timeout=(1, 5), max_answer_bytes=1_000_000
        )
        started = time.monotonic()
        with pytest.raises(ApiUnavailable) as caught:
            client.list_operations()
    assert time.monotonic() - started < 1
    assert (caught.value.timeout, caught.value.http_status) == (False, 200)


def test_an_honest_page_of_100_operations_fits_well_within_the_default(seeded_sandbox):
    """A real page of 100 operations with their transactions (72 KB) fits in a tenth of the
    default limit."""
    from portal.api.client import MAX_ANSWER_BYTES

    client = MerchantApiClient(seeded_sandbox.base_url, token=seeded_sandbox.token)
    client.max_answer_bytes = MAX_ANSWER_BYTES // 10
    page = client.list_operations(per_page=100)
    assert len(page.items) == 100

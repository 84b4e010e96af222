"""What the portal adds to the API: a page of 50 operations, through the portal and directly.

Starts the seeded sandbox (by default 300 operations, as `make run` seeds it) and the portal
under gunicorn (with the project's gunicorn.conf.py) as real processes, signs in, then alternates
the two requests: the API's `GET /operations?per_page=50` and the portal's full page
`GET /operations?per_page=50` (which makes that same API call, then renders). Prints the median
of each and their ratio (target: at most 1.5). For reference it also times the same API call
made with the portal's client (HTTP plus reading the records) and the portal's `/healthz`, a
request through gunicorn and Flask that does no work: no page that calls the API can be faster
than that request and the API call together, whatever it renders.

    .venv/bin/python bench/portal_operations_page.py [--requests 40] [--operations 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from portal.api import MerchantApiClient
from tests.support.portal_server import run_portal
from tests.support.sandbox_server import run_sandbox

PER_PAGE = {"per_page": "50"}
TARGET_RATIO = 1.5


def timed(call) -> float:
    started = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40, help="pairs of requests (>= 30)")
    parser.add_argument("--operations", type=int, default=300, help="operations in the sandbox")
    arguments = parser.parse_args()
    seed = arguments.operations
    with (
        tempfile.TemporaryDirectory() as folder,
        run_sandbox(Path(folder) / "sandbox.db", seed=seed, random_seed=7) as sandbox,
        run_portal(Path(folder), sandbox, gunicorn=True) as server,
    ):
        portal = server.signed_in_session("owner@acme.test")
        api = requests.Session()
        api.headers.update(sandbox.headers())
        operations = f"{sandbox.api_url}/operations"
        page = f"{server.url}/operations"
        client = MerchantApiClient(sandbox.base_url, token=sandbox.token)
        for _ in range(5):  # warm up connections, caches and templates
            timed(lambda: api.get(operations, params=PER_PAGE, timeout=30))
            timed(lambda: portal.get(page, params=PER_PAGE, timeout=30))
        api_ms, portal_ms, client_ms, empty_ms = [], [], [], []
        for _ in range(max(arguments.requests, 30)):
            api_ms.append(timed(lambda: api.get(operations, params=PER_PAGE, timeout=30)))
            portal_ms.append(timed(lambda: portal.get(page, params=PER_PAGE, timeout=30)))
            empty_ms.append(timed(lambda: portal.get(f"{server.url}/healthz", timeout=30)))
            started = time.perf_counter()
            client.list_operations(per_page=50)
            client_ms.append((time.perf_counter() - started) * 1000)
    api_median, portal_median = statistics.median(api_ms), statistics.median(portal_ms)
    empty_median = statistics.median(empty_ms)
    ratio = portal_median / api_median
    print(
        f"requests: {len(api_ms)} alternating pairs, page of 50 operations "
        f"(sandbox seeded with {arguments.operations:,})"
    )
    print(f"API direct (HTTP only)          median {api_median:7.2f} ms")
    print(f"API through the portal's client median {statistics.median(client_ms):7.2f} ms")
    print(f"portal page (full HTML)         median {portal_median:7.2f} ms")
    print(f"portal /healthz (no work)       median {empty_median:7.2f} ms")
    print(f"ratio portal / API direct       {ratio:.2f} (target at most {TARGET_RATIO})")
    print(
        f"least possible ratio            {(empty_median + api_median) / api_median:.2f} "
        "(/healthz and the API call, one after the other)"
    )
    sys.exit(0 if ratio <= TARGET_RATIO else 1)


if __name__ == "__main__":
    main()

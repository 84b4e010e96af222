"""What the portal adds to the API: a page of 50 operations, through the portal and directly.

Starts the seeded sandbox (300 operations) and the portal under gunicorn as real processes,
signs in, then alternates the two requests: the API's `GET /operations?per_page=50` and the
portal's full page `GET /operations?per_page=50` (which makes that same API call, then renders).
Prints the median of each and their ratio (target of issue #4: at most 1.5), and for reference
the same API call made with the portal's client (HTTP plus reading the records).

    .venv/bin/python bench/portal_operations_page.py [--requests 40]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from portal.api import MerchantApiClient  # noqa: E402
from tests.support.sandbox_server import free_port, run_sandbox  # noqa: E402

EMAIL, PASSWORD = "owner@bench.test", "bench password 1234"
PER_PAGE = {"per_page": "50"}
TARGET_RATIO = 1.5


def flask_cli(env: dict[str, str], *args: str) -> None:
    command = [sys.executable, "-m", "flask", "--app", "portal", *args]
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)


def wait_for(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the portal exited")
        try:
            if requests.get(url, timeout=5).ok:
                return
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.1)
    raise TimeoutError(url)


def signed_in(portal_url: str) -> requests.Session:
    session = requests.Session()
    page = session.get(f"{portal_url}/login", timeout=10).text
    token = re.search(r'name="csrf_token"[^>]*?value="([^"]+)"', page).group(1)
    data = {"email": EMAIL, "password": PASSWORD, "csrf_token": token}
    response = session.post(f"{portal_url}/login", data=data, timeout=10, allow_redirects=False)
    assert response.status_code == 302, "sign-in failed"
    return session


def timed(call) -> float:
    started = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40, help="pairs of requests (>= 30)")
    arguments = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as folder,
        run_sandbox(Path(folder) / "sandbox.db", seed=300, random_seed=7) as sandbox,
    ):
        port = free_port()
        env = {
            **os.environ,
            "PORTAL_INSTANCE_PATH": folder,
            "PORTAL_DATABASE_URL": f"sqlite:///{Path(folder) / 'portal.sqlite3'}",
            "PORTAL_SECRET_KEY": "bench-secret",
            "PORTAL_TOKEN_KEYS": Fernet.generate_key().decode(),
        }
        flask_cli(env, "db", "upgrade")
        flask_cli(env, "create-user", EMAIL, "--merchant", "Bench", "--role", "owner",
                  "--password", PASSWORD)  # fmt: skip
        flask_cli(env, "connect-api", "--merchant", "Bench", "--base-url", sandbox.base_url,
                  "--environment", "sandbox", "--token", sandbox.token)  # fmt: skip
        portal_url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "--workers",
                "1",
                "--bind",
                f"127.0.0.1:{port}",
                "--log-level",
                "warning",
                "wsgi:app",
            ],
            cwd=ROOT,
            env=env,
        )
        try:
            wait_for(f"{portal_url}/healthz", server)
            portal = signed_in(portal_url)
            api = requests.Session()
            api.headers.update(sandbox.headers())
            direct = lambda: api.get(f"{sandbox.api_url}/operations", params=PER_PAGE, timeout=30)  # noqa: E731
            page = lambda: portal.get(f"{portal_url}/operations", params=PER_PAGE, timeout=30)  # noqa: E731
            client = MerchantApiClient(sandbox.base_url, token=sandbox.token)
            for _ in range(5):  # warm up connections, caches and templates
                timed(direct)
                timed(page)
            api_ms, portal_ms, client_ms = [], [], []
            for _ in range(max(arguments.requests, 30)):
                api_ms.append(timed(direct))
                portal_ms.append(timed(page))
                started = time.perf_counter()
                client.list_operations(per_page=50)
                client_ms.append((time.perf_counter() - started) * 1000)
        finally:
            server.terminate()
            server.wait(timeout=10)
    api_median, portal_median = statistics.median(api_ms), statistics.median(portal_ms)
    ratio = portal_median / api_median
    print(f"requests: {len(api_ms)} alternating pairs, page of 50 operations (seeded sandbox)")
    print(f"API direct (HTTP only)          median {api_median:7.2f} ms")
    print(f"API through the portal's client median {statistics.median(client_ms):7.2f} ms")
    print(f"portal page (full HTML)         median {portal_median:7.2f} ms")
    print(f"ratio portal / API direct       {ratio:.2f} (target at most {TARGET_RATIO})")
    sys.exit(0 if ratio <= TARGET_RATIO else 1)


if __name__ == "__main__":
    main()

"""`python -m sandbox`: serve the sandbox API on a real HTTP server."""

from __future__ import annotations

import argparse
import logging

from werkzeug.serving import run_simple

from . import create_app
from .faults import ResettingRequestHandler


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m sandbox", description="Local Merchant Payment Service API v1."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--database", required=True, help="SQLite file; created when missing")
    parser.add_argument("--token", required=True, help="the application's bearer token")
    parser.add_argument("--company-token", help="the company's bearer token")
    parser.add_argument("--seed", type=int, default=0, help="operations to create on first start")
    parser.add_argument("--random-seed", type=int, default=1, help="makes --seed deterministic")
    parser.add_argument("--operation-ttl-minutes", type=int, default=60)
    parser.add_argument("--quiet", action="store_true", help="do not log every request")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    arguments = parse_arguments(argv)
    app = create_app(
        arguments.database,
        arguments.token,
        arguments.company_token,
        operation_ttl_minutes=arguments.operation_ttl_minutes,
        seed=arguments.seed,
        random_seed=arguments.random_seed,
    )
    if arguments.quiet:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
    print(f"Sandbox API on http://{arguments.host}:{arguments.port}/sandbox/v1", flush=True)
    run_simple(
        arguments.host, arguments.port, app, threaded=True, request_handler=ResettingRequestHandler
    )


if __name__ == "__main__":
    main()

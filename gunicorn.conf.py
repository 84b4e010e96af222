"""gunicorn's settings for the portal; gunicorn reads this file when started in this folder.

Threaded workers keep browsers' connections open between requests (sync workers close every
one), and a worker waiting on the API can serve other requests meanwhile. Override any of
these on the command line or in GUNICORN_CMD_ARGS.

The portal runs behind a buffering reverse proxy (docs/operations.md): a thread that reads a
slowly sent request is a thread no other browser gets, and gunicorn has no per-request read
timeout. The proxy reads requests whole and hands them over in one go.
"""

import os

worker_class = "gthread"
# A worker process per CPU this process may use: a page's work is Python, which runs one thread
# at a time in a process, and the threads cover the waits on the API. On 2 CPUs, run in turns,
# 2 or 3 processes served the load test's 200 users with a p95 of 250-360 ms and 10.6-12.5 ms
# of CPU a page, 4 processes with 450-470 ms and 12.7-13.8 ms (docs/performance.md).
# `--workers` or WEB_CONCURRENCY (which gunicorn itself reads when no file sets it) chooses
# another number.
workers = int(os.environ.get("WEB_CONCURRENCY", len(os.sched_getaffinity(0))))
threads = int(os.environ.get("PORTAL_GUNICORN_THREADS", "4"))
keepalive = 5
# A worker that stops answering its arbiter for this long is restarted. The longest a request
# may honestly take is the API's connect and read timeouts (3.05 + 15 s) with a page around them.
timeout = 30
# On a restart, requests under way get this long to finish (an API call included).
graceful_timeout = 25

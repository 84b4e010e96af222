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
threads = int(os.environ.get("PORTAL_GUNICORN_THREADS", "4"))
keepalive = 5
# A worker that stops answering its arbiter for this long is restarted. The longest a request
# may honestly take is the API's connect and read timeouts (3.05 + 15 s) with a page around them.
timeout = 30
# On a restart, requests under way get this long to finish (an API call included).
graceful_timeout = 25

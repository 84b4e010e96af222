"""gunicorn's settings for the portal; gunicorn reads this file when started in this folder.

Threaded workers keep browsers' connections open between requests (sync workers close every
one), and a worker waiting on the API can serve other requests meanwhile. Override any of
these on the command line or in GUNICORN_CMD_ARGS.
"""

import os

worker_class = "gthread"
threads = int(os.environ.get("PORTAL_GUNICORN_THREADS", "4"))
keepalive = 5

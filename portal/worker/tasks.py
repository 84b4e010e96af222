"""The worker's tasks. Each minute the scheduler plans that minute's ticks, one every
`PORTAL_SYNC_SECONDS`; a tick syncs every connected merchant's mirror that is due, then sends
what is due (webhooks, e-mail).

Every worker plans its own ticks: the rules claim each piece of work in the database (a lease
per merchant), so a second worker's tick finds it taken or already done and makes no extra
request. Ticks of one worker overlap when a sync is long (a first sync of a large account):
the threads then share the merchants between them.
"""

from __future__ import annotations

import time

from flask import current_app
from huey import crontab

from portal.rules import mail, mirror, webhooks
from portal.worker.queue import huey, in_app_context


def plan_rest_of_minute() -> None:
    """Schedule ticks from now to the end of this minute (the worker calls it as it starts,
    so a new worker syncs at once instead of at the next whole minute)."""
    interval = max(1, int(current_app.config["SYNC_SECONDS"]))
    left = 60 - int(time.time()) % 60
    for offset in range(0, left, interval):
        tick.schedule(delay=offset)


@huey.periodic_task(crontab())
@in_app_context
def plan_ticks() -> None:
    """Schedule this minute's ticks."""
    interval = max(1, int(current_app.config["SYNC_SECONDS"]))
    for offset in range(0, 60, interval):
        tick.schedule(delay=offset)


@huey.task()
@in_app_context
def tick() -> None:
    """Sync what is due, then deliver the events it wrote."""
    mirror.sync_due()
    webhooks.deliver_due()
    mail.send_due()

"""The worker's tasks. Each minute the scheduler plans that minute's ticks, one every
`PORTAL_SYNC_SECONDS`; a tick starts three stages, each its own task on its own thread: the
mirror's syncs, webhook deliveries (with refunds, the other requests sent out) and e-mail. A
slow or failing stage (a shop that does not answer, an API that drips) never delays the
others; inside each stage the rules keep one merchant's trouble from the others (each
endpoint's deliveries go on a turn of their own, on threads of their own).

Every worker plans its own ticks: the rules claim each piece of work in the database (a lease
per merchant, per delivery, per message), so a second worker's tick finds it taken or already
done and makes no extra request. Syncs of one worker overlap when a sync is long (a first sync
of a large account): the threads then share the merchants between them. A mail pass runs once
at a time in each worker; a tick that finds one under way leaves the work to it.
"""

from __future__ import annotations

import time

from flask import current_app
from huey import crontab

from portal.live.rules import mail, mirror, webhooks
from portal.live.worker.queue import DELIVERIES, MAIL, SYNCS, huey, in_app_context
from portal.money.rules import approvals, controls, rate_history, refunds
from portal.reports.rules import statement_mail


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


@huey.periodic_task(crontab(minute="7"))
@in_app_context
def housekeeping() -> None:
    """Each hour, forget what the portal keeps only for a while: the rates read longer ago
    than `PORTAL_RATE_HISTORY_DAYS`, the webhook delivery log and the mail sent of more than 30
    days ago. Events stay: they are each operation's timeline."""
    rate_history.forget_old()
    webhooks.forget_old_log()
    mail.forget_old()


@huey.task()
def tick() -> None:
    """Start each stage as a task of its own."""
    for stage_task in STAGE_TASKS:
        stage_task()


@huey.task()
@SYNCS
@in_app_context
def sync_mirror() -> None:
    """Sync every merchant whose mirror is due."""
    mirror.sync_due()


@huey.task()
@DELIVERIES
@in_app_context
def send_out() -> None:
    """Start sending the webhooks that are due, on the delivery threads (that returns at
    once); then send each refund that is ready and each approved withdrawal, once, expire the
    claim links and approval requests not used in time, and apply the relaxed controls whose
    delay passed: off any request thread, so a slow payment service never holds a page. Also
    asked for by a test event or a resend."""
    webhooks.deliver_due(wait=False)
    refunds.expire_due()
    refunds.send_due()
    approvals.expire_due()
    approvals.send_due()
    controls.apply_due()


@huey.task()
@MAIL
@in_app_context
def send_mail() -> None:
    """Queue the mail of new events and the statements whose period ended, and send what is
    due."""
    statement_mail.queue_due()
    mail.send_due()


# One task per stage: a task that finds its stage's threads taken returns at once, trusting
# the task under way to do its work, which only a task of the same kind does (a tick's
# deliveries once waited a whole tick for its refunds, sent by a task of their own).
STAGE_TASKS = (sync_mirror, send_out, send_mail)

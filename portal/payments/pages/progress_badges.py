"""The badge of an operation's state: its status, or what the pages call a `new` operation that
money already reached ("Partly paid", "Overpaid").

The API says `new` for an operation nobody paid and for one that received part of its amount;
lists, the operation page and the dashboard show the second as its payment state instead
(`portal.payments.rules.progress` decides which, `portal.payments.rules.state_words` words it).
"""

from __future__ import annotations

from flask import Flask
from markupsafe import Markup

from portal.api import OPERATION_STATUSES, Operation
from portal.payments.rules.progress import OPEN_STATUSES, Progress, amount_due, can_change, progress
from portal.payments.rules.state_words import PROGRESS_WORDS, state_words
from portal.web.formatting import badge

# How often a list, or the dashboard's latest operations, is asked for again while a row shown
# can still change (one API request each time).
LIST_POLL_SECONDS = 10


def state_badge(status: str, state: Progress | None) -> Markup:
    """The status badge, or the payment state's when a `new` operation received money."""
    if state is None:
        return badge(status, OPERATION_STATUSES, state_words(status))
    words = state_words(status, state)
    return Markup(f'<span class="badge status-new status-{state}">{words}</span>')  # noqa: S704  (fixed words)


def operation_badge(operation: Operation) -> Markup:
    return state_badge(operation.status, progress(operation))


def init_app(app: Flask) -> None:
    app.add_template_global(state_badge)
    app.add_template_global(progress, "payment_progress")
    app.add_template_global(amount_due)
    app.add_template_global(can_change)
    app.jinja_env.globals["progress_words"] = PROGRESS_WORDS
    app.jinja_env.globals["live_statuses"] = OPEN_STATUSES
    app.jinja_env.globals["list_poll_seconds"] = LIST_POLL_SECONDS

"""The badge of an operation's state: what its money amounts to ("Underpaid", "Paid late"), as
`portal.payments.rules.operation_money` decides and `portal.payments.rules.state_words` words it.
"""

from __future__ import annotations

from functools import lru_cache

from flask import Flask
from markupsafe import Markup, escape

from portal.payments.rules.operation_money import OPEN_STATUSES, amount_due, can_change
from portal.payments.rules.state_words import STATE_WORDS, state_words

# How often a list, or the dashboard's latest operations, is asked for again while a row shown
# can still change (one API request each time).
LIST_POLL_SECONDS = 10


@lru_cache(maxsize=64)
def state_badge(state: str | None, status: str | None = None) -> Markup:
    """The state's badge; without a state (a status this portal does not know), the status as
    the API wrote it."""
    words = state_words(state, status)
    kind = f"state-{state}" if state else "status-other"
    return Markup(f'<span class="badge {kind}">{escape(words)}</span>')  # noqa: S704  (escaped)


def init_app(app: Flask) -> None:
    app.add_template_global(state_badge)
    app.add_template_global(amount_due)
    app.add_template_global(can_change)
    app.jinja_env.globals["state_words"] = STATE_WORDS
    app.jinja_env.globals["live_statuses"] = OPEN_STATUSES
    app.jinja_env.globals["list_poll_seconds"] = LIST_POLL_SECONDS

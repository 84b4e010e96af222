"""Whether the payment service of a merchant's connection was found unavailable a moment ago.

A request that gets no usable answer (no connection, no answer in time, a 5xx, garbage) marks
the connection down for `API_DOWN_SECONDS` (30 by default); meanwhile its pages read the mirror
and its changes are refused before anything is sent, then the API is asked again. The mark is a
counter of the limit store (`portal.identity.rules.attempts`): with Redis every worker process
sees it; with the memory store (one process) each process remembers on its own. It names the
connection's generation, so connecting elsewhere starts with no mark.
"""

from __future__ import annotations

from flask import current_app

from portal.identity.models import Merchant
from portal.identity.rules import attempts


def _key(merchant: Merchant) -> str | None:
    connection = merchant.api_connection
    if connection is None:
        return None
    return f"api-down/{merchant.id}/{connection.generation}"


def mark_down(merchant: Merchant) -> None:
    """Remember that the merchant's payment service did not answer, for API_DOWN_SECONDS."""
    seconds = current_app.config["API_DOWN_SECONDS"]
    key = _key(merchant)
    if key is not None and seconds > 0:
        attempts.store().count(key, seconds)


def is_down(merchant: Merchant) -> bool:
    """Whether the merchant's payment service was found unavailable in the last moments."""
    key = _key(merchant)
    return key is not None and attempts.store().value(key) > 0

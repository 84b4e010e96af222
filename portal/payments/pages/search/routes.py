"""`/search?q=`: the signed-in user's merchant's records that the text is part of, by kind."""

from __future__ import annotations

from functools import partial

from flask import request
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.payments.pages.search import bp
from portal.payments.rules import search
from portal.web.access import ALL_ROLES, roles
from portal.web.api_errors import unless_unavailable
from portal.web.merchant import current_api
from portal.web.rendering import page

LIMITS = {
    "min_fragment": search.MIN_FRAGMENT,
    "max_query": search.MAX_QUERY,
    "limit": search.LIMIT,
}


@bp.get("/search")
@roles(*ALL_ROLES)
def index() -> Response:
    """Fragments from the mirror; a voucher by its exact id from the API (`vouchers` None:
    the API did not answer, or the merchant is not connected; the mirror's results still show)."""
    text = request.args.get("q", "").strip()
    if not text or len(text) > search.MAX_QUERY:
        return page("search/index.html", 422 if text else 200, text=text, found=None, **LIMITS)
    connected = current_user.merchant.api_connection is not None
    return page(
        "search/index.html",
        text=text,
        found=search.search_mirror(current_user.merchant_id, text),
        connected=connected,
        vouchers=(
            unless_unavailable(partial(search.find_voucher, current_api(), text))
            if connected
            else None
        ),
        **LIMITS,
    )

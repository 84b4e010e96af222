"""What every signed-in page shows around its content: the menu by role, with how many items
need attention, the sandbox banner and the banner of the read-only pages."""

from __future__ import annotations

from collections.abc import Callable

from flask import Flask, current_app, request, url_for
from flask_login import current_user

from portal.identity.models import Merchant, Role
from portal.settings.models import Environment
from portal.web.access import may_open
from portal.web.api_errors import read_only
from portal.web.features import menu_of

MENUS_EXTENSION = "portal_menus"


def layout_context() -> dict[str, object]:
    """Navigation, the sandbox banner and the read-only banner (the payment service down) for
    the signed-in user.

    Each entry is (label, URL, current, count): the count of items that need attention (counted
    once per sync of the mirror), 0 for the other entries; the menu shows it when there are any.
    """
    if not current_user.is_authenticated:
        return {"navigation": [], "sandbox": False, "may_open": may_open, "read_only": False}
    merchant = current_user.merchant
    navigation = [
        (label, url, request.blueprint == blueprint, count(merchant) if count else 0)
        for label, url, blueprint, count in _menu(current_user.role)
    ]
    connection = merchant.api_connection
    sandbox = connection is not None and connection.environment == Environment.SANDBOX
    return {
        "navigation": navigation,
        "sandbox": sandbox,
        "may_open": may_open,
        "read_only": read_only(),
        "synced_at": merchant.last_synced_at,
    }


def _menu(role: Role) -> tuple[tuple[str, str, str, Callable[[Merchant], int] | None], ...]:
    """The entries of the features' menus that `role` may open (as their views allow), in
    order: (label, URL, blueprint, how it counts what waits for a decision). The same for every
    request of the role, so made once per application and address prefix (SCRIPT_NAME) rather
    than for every page."""
    menus = current_app.extensions.setdefault(MENUS_EXTENSION, {})
    key = role, request.script_root
    if key not in menus:
        menus[key] = tuple(
            (entry.label, url_for(entry.endpoint), feature.name, entry.count)
            for feature, entry in menu_of(current_app)
            if may_open(entry.endpoint)
        )
    return menus[key]


def init_app(app: Flask) -> None:
    app.context_processor(layout_context)

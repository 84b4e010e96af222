"""The signed-in user's merchant, as the views reach the payment service for it."""

from __future__ import annotations

from flask_login import current_user

from portal.api import MerchantApiClient
from portal.settings.rules.connection import api_client_for


def current_api() -> MerchantApiClient:
    """The client of the signed-in user's merchant; ApiNotConnected when it has no credentials."""
    return api_client_for(current_user.merchant)

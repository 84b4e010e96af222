"""The customer's claim page of a refund: public, one-time, in the checkout's languages."""

from flask import Blueprint

from portal.web.access import PUBLIC
from portal.web.features import Feature

bp = Blueprint("refund_claims", __name__)
feature = Feature(bp, "/refund", PUBLIC)

from portal.money.pages.refund_claims import routes  # noqa: E402, F401  (registers the views)

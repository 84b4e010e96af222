"""The public checkout page: where customers land after the hosted payment page."""

from flask import Blueprint

from portal.web.access import PUBLIC
from portal.web.features import Feature

bp = Blueprint("checkout", __name__)
feature = Feature(bp, "/checkout", PUBLIC)

from portal.payments.pages.checkout import routes  # noqa: E402, F401  (registers the views on bp)

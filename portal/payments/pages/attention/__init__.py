"""The needs-attention list: what a person must decide, from the mirror."""

from flask import Blueprint

from portal.payments.rules import attention
from portal.web.features import EVERY_ROLE, Feature, MenuEntry

bp = Blueprint("attention", __name__)
feature = Feature(
    bp,
    None,
    EVERY_ROLE,
    MenuEntry("Needs attention", "attention.index", 20, count=attention.count),
)

from portal.payments.pages.attention import routes  # noqa: E402, F401  (registers the views on bp)

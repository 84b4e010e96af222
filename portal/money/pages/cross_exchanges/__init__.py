"""Cross exchanges: create, look up, follow until they expire, cancel.

The API has no list of cross exchanges, so the portal keeps the ids it created per merchant.
"""

from flask import Blueprint

from portal.web.features import EVERY_ROLE, Feature, MenuEntry

bp = Blueprint("cross_exchanges", __name__)
feature = Feature(
    bp,
    "/cross-exchanges",
    EVERY_ROLE,
    MenuEntry("Cross exchanges", "cross_exchanges.index", 90),
)

from portal.money.pages.cross_exchanges import routes  # noqa: E402, F401  (registers the views on bp)

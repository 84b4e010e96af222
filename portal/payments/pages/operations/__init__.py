"""Operations: the list with every filter of the API, the record, create, cancel, link, reject."""

from flask import Blueprint

from portal.web.features import EVERY_ROLE, Feature, MenuEntry

bp = Blueprint("operations", __name__)
feature = Feature(bp, "/operations", EVERY_ROLE, MenuEntry("Operations", "operations.index", 30))

from portal.payments.pages.operations import routes  # noqa: E402, F401  (registers the views on bp)

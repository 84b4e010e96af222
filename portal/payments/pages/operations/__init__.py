"""Operations: the list with every filter of the API, the record, create, cancel, link, reject."""

from flask import Blueprint

bp = Blueprint("operations", __name__)

from portal.payments.pages.operations import routes  # noqa: E402, F401  (registers the views on bp)

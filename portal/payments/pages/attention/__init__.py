"""The needs-attention list: what a person must decide, from the mirror."""

from flask import Blueprint

bp = Blueprint("attention", __name__)

from portal.payments.pages.attention import routes  # noqa: E402, F401  (registers the views on bp)

"""CSV exports of the operations and transactions lists for accountants (docs/exports.md)."""

from flask import Blueprint

bp = Blueprint("exports", __name__)

from portal.exports import routes  # noqa: E402, F401  (registers the views)

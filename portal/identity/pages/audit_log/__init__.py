"""/audit: the audit log of the owner's merchant, filtered and exported; it has no edit route."""

from flask import Blueprint

bp = Blueprint("audit_log", __name__)

from portal.identity.pages.audit_log import routes  # noqa: E402, F401  (registers the views on bp)

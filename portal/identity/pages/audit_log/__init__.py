"""/audit: the audit log of the owner's merchant, filtered and exported; it has no edit route."""

from flask import Blueprint

from portal.web.features import OWNERS, Feature, MenuEntry

bp = Blueprint("audit_log", __name__)
feature = Feature(bp, "/audit", OWNERS, MenuEntry("Audit", "audit_log.index", 110))

from portal.identity.pages.audit_log import routes  # noqa: E402, F401  (registers the views on bp)

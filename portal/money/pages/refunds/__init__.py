"""Refunds: owners and operators refund an operation's money by a claim link (or to an address
they type); its page cancels it or sends the link again; one that waits for an owner is decided on
/approvals."""

from flask import Blueprint

from portal.identity.models import Role
from portal.web.features import Feature

bp = Blueprint("refunds", __name__)
feature = Feature(bp, "/refunds", frozenset({Role.OWNER, Role.OPERATOR}))

from portal.money.pages.refunds import routes  # noqa: E402, F401  (registers the views on bp)

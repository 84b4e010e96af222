"""The address book: owners add and remove the named addresses money may go to, and approve a
new one before its cooling-off ends; operators read it (they type refund addresses)."""

from flask import Blueprint

from portal.identity.models import Role
from portal.web.features import Feature, MenuEntry

bp = Blueprint("address_book", __name__)
feature = Feature(
    bp,
    "/address-book",
    frozenset({Role.OWNER, Role.OPERATOR}),
    MenuEntry("Address book", "address_book.index", 64),
)

from portal.money.pages.address_book import routes  # noqa: E402, F401  (registers the views on bp)

"""What a person reads when a change to users is refused (`portal.identity.rules.accounts`
decides), on
the settings pages and from the command that creates users."""

from __future__ import annotations

from portal.identity.models import Merchant
from portal.identity.rules.accounts import MIN_PASSWORD_LENGTH, AccountError, Refusal

CANNOT_ADD = "This address cannot be added. Ask the person for another email address."
SENTENCES = {
    Refusal.CANNOT_ADD: CANNOT_ADD,
    Refusal.OWN_ROLE: "You cannot change your own role; another owner can.",
    Refusal.OWN_SIGN_IN: "Change your own password on the Account page: it asks for your "
    "current one.",
    Refusal.OTHER_OWNER_SIGN_IN: "Another owner sets their own password and two-factor: you "
    "cannot change them for them.",
    Refusal.REMOVE_SELF: "You cannot remove yourself; another owner can.",
    Refusal.REMOVE_OWNER: "An owner is removed in two steps: make them an accountant first "
    "(which waits for an owner's approval, or 48 hours), then remove them.",
    Refusal.TOO_SHORT: f"The password needs at least {MIN_PASSWORD_LENGTH} characters.",
}


def refusal_sentence(refusal: AccountError, merchant: Merchant) -> str:
    """Why the change to `merchant`'s users is refused, and what to do instead."""
    if refusal.reason is Refusal.NOT_AN_EMAIL:
        return f"{refusal.email!r} is not an email address."
    if refusal.reason is Refusal.ALREADY_A_USER:
        return f"{refusal.email} is already a user of {merchant.name}."
    return SENTENCES[refusal.reason]

"""Languages: the public checkout page speaks the customer's language; the portal stays English.

The customer's language is the one they chose on the page (`?lang=`, then remembered in a
cookie for that link), else the browser's (Accept-Language).

Catalogs are `portal/translations/<lang>/LC_MESSAGES/messages.po` (source); `make install`
compiles them to `.mo`. Extract and update with `make messages`.
"""

from __future__ import annotations

from pathlib import Path

from flask import Flask, request
from werkzeug.datastructures import LanguageAccept

from portal.extensions import babel

DEFAULT_LOCALE = "en"
# The languages of the checkout page, in the order of preference when the browser ties.
CUSTOMER_LOCALES = ("en", "es", "de", "ru")
TRANSLATIONS = Path(__file__).resolve().parent.parent / "translations"
# Each language's name in itself: what the page's language switch offers.
LANGUAGE_NAMES = {"en": "English", "es": "Español", "de": "Deutsch", "ru": "Русский"}
CUSTOMER_BLUEPRINTS = frozenset({"checkout", "refund_claims"})
LANGUAGE_PARAMETER = "lang"
LANGUAGE_COOKIE = "checkout_lang"


def chosen_locale() -> str | None:
    """The language the customer picked on the page, now (`?lang=`) or before (the cookie)."""
    for chosen in (request.args.get(LANGUAGE_PARAMETER), request.cookies.get(LANGUAGE_COOKIE)):
        if chosen in CUSTOMER_LOCALES:
            return chosen
    return None


def select_locale() -> str:
    """The customer's choice or browser language on customer pages; English everywhere else."""
    if request.blueprint not in CUSTOMER_BLUEPRINTS:
        return DEFAULT_LOCALE
    return chosen_locale() or preferred_locale(request.accept_languages)


def preferred_locale(accepted: LanguageAccept) -> str:
    """The first language the browser prefers that we speak, by its primary tag (`es-MX` is es).

    Werkzeug's `best_match` would prefer an exact match of lower quality (`en-US,ru;q=0.9` gave
    ru), so the tags are compared in the browser's order.
    """
    for tag, _quality in accepted:  # sorted by quality, best first
        primary = tag.replace("_", "-").split("-")[0].lower()
        if primary in CUSTOMER_LOCALES:
            return primary
    return DEFAULT_LOCALE


def init_app(app: Flask) -> None:
    app.config["BABEL_TRANSLATION_DIRECTORIES"] = str(TRANSLATIONS)
    app.config["BABEL_DEFAULT_LOCALE"] = DEFAULT_LOCALE
    babel.init_app(app, locale_selector=select_locale)

"""The registry of features: each page package declares once, beside its blueprint, where its
pages live, its menu entry and whom it serves.

`create_app` finds every package's `feature` and registers it here; the menu and the tests'
walks (access, bad input, phones, accessibility) read the features back from the application,
so a new page is registered, shown in the menu and walked without editing any list. The kit
imports no page: it only holds what the packages declared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from flask import Blueprint, Flask

from portal.identity.models import Merchant, Role

FEATURES_EXTENSION = "portal_features"
# Who a feature serves: `access.PUBLIC` (anyone, signed in or not) or the roles it is for.
Access = str | frozenset[Role]
EVERY_ROLE: frozenset[Role] = frozenset(Role)
OWNERS: frozenset[Role] = frozenset({Role.OWNER})


@dataclass(frozen=True)
class MenuEntry:
    """A feature's entry in the main menu, shown to the roles its endpoint's view allows."""

    label: str
    endpoint: str
    position: int  # entries are shown lowest first; leave gaps for the next one
    # How many items wait for the user's decision (shown beside the label when any).
    count: Callable[[Merchant], int] | None = None


@dataclass(frozen=True)
class Feature:
    """One area of the portal: its blueprint, mounted at `url_prefix`.

    `serves` is whom its pages are for by default. The `@roles` (or `@public`) of each view
    stays the only thing the server enforces; the access matrix test checks every view against
    `serves` and names the views that are deliberately narrower or wider.
    """

    blueprint: Blueprint
    url_prefix: str | None
    serves: Access
    menu: MenuEntry | None = None

    @property
    def name(self) -> str:
        return self.blueprint.name

    def owns(self, endpoint: str) -> bool:
        """Whether the endpoint is one of this feature's views."""
        return endpoint.startswith(f"{self.name}.")


def register(app: Flask, features: Iterable[Feature]) -> None:
    """Mount each feature's blueprint at its prefix and remember the feature on the app."""
    registered = app.extensions.setdefault(FEATURES_EXTENSION, [])
    for feature in features:
        app.register_blueprint(feature.blueprint, url_prefix=feature.url_prefix)
        registered.append(feature)


def features_of(app: Flask) -> tuple[Feature, ...]:
    """The features registered on the app, in the order they were registered."""
    return tuple(app.extensions.get(FEATURES_EXTENSION, ()))


def menu_of(app: Flask) -> tuple[tuple[Feature, MenuEntry], ...]:
    """The menu's entries in order, each with the feature it opens."""
    entries = [(feature, menu) for feature in features_of(app) if (menu := feature.menu)]
    return tuple(sorted(entries, key=lambda pair: pair[1].position))


def feature_of(app: Flask, endpoint: str) -> Feature | None:
    """The feature whose view the endpoint is; None for Flask's own (`static`) or a stray."""
    return next((feature for feature in features_of(app) if feature.owns(endpoint)), None)

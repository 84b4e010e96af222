"""Who may open which view: every endpoint declares it, and an undeclared one is refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from flask import abort, current_app, make_response, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from portal.extensions import login_manager
from portal.identity.models import Role

View = TypeVar("View", bound=Callable)

ACCESS_ATTRIBUTE = "portal_access"
ENROLMENT_ATTRIBUTE = "portal_open_before_enrolment"
CHOICE_ATTRIBUTE = "portal_open_before_password_choice"
PUBLIC = "public"
# Flask's own static view is a bound method, which cannot carry the attribute.
PUBLIC_ENDPOINTS = frozenset({"static"})
ALL_ROLES = tuple(Role)


def public(view: View) -> View:
    """Anyone may open the view, signed in or not."""
    setattr(view, ACCESS_ATTRIBUTE, PUBLIC)
    return view


def roles(*allowed: Role) -> Callable[[View], View]:
    """Only signed-in users with one of these roles may open the view."""

    def decorate(view: View) -> View:
        setattr(view, ACCESS_ATTRIBUTE, frozenset(allowed))
        return view

    return decorate


def open_before_enrolment(view: View) -> View:
    """A user whose merchant requires two-factor sign-in may open the view before enrolling."""
    setattr(view, ENROLMENT_ATTRIBUTE, True)
    return view


def open_before_password_choice(view: View) -> View:
    """A user whose password someone else typed may open the view before choosing their own."""
    setattr(view, CHOICE_ATTRIBUTE, True)
    return view


def access_of(endpoint: str) -> str | frozenset[Role] | None:
    """PUBLIC, the set of roles allowed, or None when the endpoint declares nothing."""
    if endpoint in PUBLIC_ENDPOINTS:
        return PUBLIC
    view = current_app.view_functions.get(endpoint)
    return getattr(view, ACCESS_ATTRIBUTE, None)


def may_open(endpoint: str) -> bool:
    """Whether the current user may open the endpoint (navigation shows only these)."""
    access = access_of(endpoint)
    if access == PUBLIC:
        return True
    return (
        isinstance(access, frozenset)
        and current_user.is_authenticated
        and current_user.role in access
    )


def enforce() -> Response | None:
    """Before every request: refuse what the endpoint does not allow to the current user."""
    if request.endpoint is None:
        return None
    access = access_of(request.endpoint)
    if access == PUBLIC:
        return None
    if access is None:
        current_app.logger.error("Endpoint %s declares no access rule; refused.", request.endpoint)
        abort(403)
    if not current_user.is_authenticated:
        return login_manager.unauthorized()
    view = current_app.view_functions[request.endpoint]
    if current_user.must_choose_password and not getattr(view, CHOICE_ATTRIBUTE, False):
        return redirect_to(url_for("account.choose_password"), htmx_status=403)
    if current_user.two_factor_due and not getattr(view, ENROLMENT_ATTRIBUTE, False):
        # The setup page says why; no flash, which htmx polling would pile up.
        return redirect_to(url_for("account.two_factor"), htmx_status=403)
    if current_user.role not in access:
        abort(403)
    return None


def redirect_to(url: str, *, htmx_status: int) -> Response:
    """A redirect; for an htmx fragment request, an empty answer that makes htmx go there."""
    if request.headers.get("HX-Request") == "true" and request.headers.get("HX-Boosted") != "true":
        response = make_response("", htmx_status)
        response.headers["HX-Redirect"] = url
        return response
    return redirect(url)

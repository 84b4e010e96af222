"""`/statement-mail/stop/<token>`: stop the statement mails in one click, without signing in.

Opening the link changes nothing (a mail scanner follows links): it shows a button, whose POST
stops the mails. A mail program's own "unsubscribe" (RFC 8058, `List-Unsubscribe-Post`) POSTs
to the same link without a page, so the POST carries no CSRF token: the signed token in the path
is the secret a forger would need, and it can only stop the mails it was sent with.
"""

from __future__ import annotations

from werkzeug.wrappers import Response

from portal.extensions import csrf
from portal.identity.rules import audit
from portal.reports.pages.statement_mail import bp
from portal.reports.rules import statement_mail
from portal.web.access import public
from portal.web.rendering import page
from portal.web.security import private_page_headers

DEAD_LINK = "This link is not one the portal sent, or its account is gone."

bp.after_request(private_page_headers)  # the link is the key to the user's choice


@bp.route("/stop/<token>", methods=["GET"])
@public
def stop(token: str) -> Response:
    """The button that stops the mails."""
    try:
        user = statement_mail.user_of_stop_link(token)
    except statement_mail.StopRefused:
        return page("statement_mail/dead_link.html", 404, error=DEAD_LINK)
    return page("statement_mail/stop.html", email=user.email, stopped=False)


@bp.route("/stop/<token>", methods=["POST"])
@public
@csrf.exempt
def confirm_stop(token: str) -> Response:
    """Stop the mails (the button, or a mail program's one-click POST); audited as the user's."""
    try:
        user = statement_mail.stop(token)
    except statement_mail.StopRefused:
        return page("statement_mail/dead_link.html", 404, error=DEAD_LINK)
    audit.record("statement_mail.stop", user=user)
    return page("statement_mail/stop.html", email=user.email, stopped=True)

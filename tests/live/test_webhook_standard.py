"""Standard Webhooks: every delivery verifies with the specification's own libraries (from PyPI,
and from npm run by `node`), beside `Portal-Signature`; secrets of the old form are rotated."""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path

import pytest
import standardwebhooks
from sqlalchemy import select, update

from portal.extensions import db
from portal.live.models import WebhookDelivery
from portal.live.rules import webhooks
from tests.live.test_webhooks import (
    as_the_shop_receives,
    configure,
    deliver,
    delivered_one,
    documented_check,
    record,
    shown_secret,
)
from tests.support.forms import csrf_token
from tests.support.smtp import text_of


def test_a_delivery_verifies_with_the_standard_webhooks_libraries_and_a_tampered_one_not(
    app, owner, shop
):
    secret, request = delivered_one(app, owner, shop)
    assert webhooks.standard_key(secret) is not None, "whsec_ and base64 of 32 bytes"
    assert request.headers["webhook-id"] == request.event_id, "the same on every retry"
    assert request.verified_in_python(secret) == request.json
    assert request.verified_in_javascript(secret) == request.json
    assert request.signed_by(secret), "Portal-Signature still signs"

    tampered = type(request)(
        request.path, request.headers, request.body.replace(b"confirmed", b"canceled!")
    )
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        tampered.verified_in_python(secret)
    assert tampered.verified_in_javascript(secret) is None
    other = webhooks.new_secret()
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        request.verified_in_python(other)
    assert request.verified_in_javascript(other) is None


def test_a_delivery_signed_ten_minutes_ago_is_refused_by_the_libraries(
    app, owner, shop, monkeypatch
):
    configure(owner, shop.url, "operation.confirmed")
    secret = shown_secret(owner)
    record(app, "operation.confirmed")
    signed_at = webhooks.utcnow() - timedelta(minutes=10)  # a captured request replayed later
    with app.app_context():
        webhooks.fan_out()
        db.session.execute(update(WebhookDelivery).values(next_attempt_at=signed_at))
        db.session.commit()
    monkeypatch.setattr(webhooks, "utcnow", lambda: signed_at)
    deliver(app)
    (request,) = shop.wait_for(1)
    assert int(request.headers["webhook-timestamp"]) == int(signed_at.timestamp())
    with pytest.raises(standardwebhooks.WebhookVerificationError, match="too old"):
        request.verified_in_python(secret)
    assert request.verified_in_javascript(secret) is None


@pytest.fixture
def portal_config(portal_config, mail_server):
    return portal_config | {"SMTP_URL": mail_server.url, "MAIL_RETRY_SECONDS": 0}


def _made_legacy(app) -> str:
    """Give Acme's endpoint a secret of the old form, as every endpoint had before the Standard
    Webhooks headers (migration 0021 marks them `legacy_secret`); that secret."""
    from portal import crypto
    from portal.extensions import db
    from portal.live.models import WebhookEndpoint

    old = webhooks.SECRET_PREFIX + secrets.token_urlsafe(32)
    with app.app_context():
        endpoint = db.session.scalars(select(WebhookEndpoint)).one()
        endpoint.secret_encrypted = crypto.encrypt(old)
        endpoint.legacy_secret = True
        db.session.commit()
    return old


def test_an_old_form_secret_is_rotated_with_its_overlap_and_the_owners_are_mailed(
    app, owner, shop, mail_server, accounts
):
    from portal.live.rules import mail

    configure(owner, shop.url, "operation.confirmed")
    old = _made_legacy(app)
    assert webhooks.standard_key(old) is None, "the libraries cannot load it as it is"
    record(app, "operation.confirmed")
    deliver(app)  # the worker's pass rotates first, then sends
    new = shown_secret(owner)
    assert new != old and webhooks.standard_key(new) is not None

    (request,) = shop.wait_for(1)
    assert request.signed_by(old) and request.signed_by(new), "Portal-Signature: both, 24 hours"
    assert request.verified_in_python(new) == request.json
    assert request.verified_in_javascript(new) == request.json
    assert len(request.headers["webhook-signature"].split()) == 1, "the old one cannot sign it"

    def about_the_secret() -> list:
        with app.app_context():
            mail.send_due()
        return [sent for sent in mail_server.messages if "signing secret" in sent["Subject"]]

    (message,) = about_the_secret()
    assert message["To"] == accounts.owner, "the owner, nobody else"
    assert "until" in text_of(message) and "/settings/notifications" in text_of(message)

    record(app, "operation.confirmed", "op-2")
    deliver(app)
    assert len(shop.wait_for(2)) == 2
    assert len(about_the_secret()) == 1, "rotated once, mailed once"
    assert shown_secret(owner) == new


def test_during_a_rotation_both_standard_secrets_sign(app, owner, shop):
    configure(owner, shop.url, "operation.confirmed")
    first = shown_secret(owner)
    rotate = "/settings/notifications/rotate"
    assert owner.post(rotate, data={"csrf_token": csrf_token(owner, rotate)}).status_code == 302
    second = shown_secret(owner)
    record(app, "operation.confirmed")
    deliver(app)
    (request,) = shop.wait_for(1)
    assert len(request.headers["webhook-signature"].split()) == 2
    for secret in (first, second):
        assert request.verified_in_python(secret) == request.json
        assert request.verified_in_javascript(secret) == request.json


def test_the_library_example_in_the_documentation_accepts_a_delivery_and_refuses_a_tampered_one(
    app, owner, shop
):
    from werkzeug.exceptions import BadRequest

    secret, request = delivered_one(app, owner, shop)
    check = documented_check("verified_standard")
    assert as_the_shop_receives(request, check, secret) == request.json
    with pytest.raises(BadRequest):
        as_the_shop_receives(request, check, secret, request.body + b" ")


def test_each_type_s_schema_is_in_the_documentation_and_its_example_on_the_page(app, owner):
    import html
    import json

    import jsonschema

    from portal.live.rules import webhook_schemas

    folder = Path(__file__).resolve().parents[2] / "docs" / "webhook-schemas"
    types = webhook_schemas.types_described()
    assert sorted(path.stem for path in folder.glob("*.json")) == sorted(types)
    page = html.unescape(owner.get("/settings/notifications").get_data(as_text=True))
    for type_ in types:
        documented = (folder / f"{type_}.json").read_text()
        assert documented == webhook_schemas.schema_text(type_), (
            f"{type_}: run webhook_schemas.write_catalogue(Path('docs/webhook-schemas'))"
        )
        example = webhook_schemas.example(type_)
        jsonschema.validate(example, json.loads(documented))
        assert json.dumps(example, indent=2) in page


def test_the_test_shop_fails_a_block_that_received_a_body_its_type_s_schema_refuses():
    """Every webhook test relies on the shop's check of each body against its type's schema."""
    import json

    import requests

    from portal.live.rules import webhook_schemas
    from tests.support.shop import run_shop

    valid = webhook_schemas.example("operation.confirmed")
    with pytest.raises(AssertionError, match="'surprise' was unexpected"), run_shop() as shop:
        for body in (valid, valid | {"surprise": 1}):
            requests.post(shop.url, data=json.dumps(body), timeout=5).raise_for_status()
    assert len(shop.invalid) == 1

"""Error answers become ApiRefusal / ApiUnavailable, whatever shape the body has."""

from __future__ import annotations

import logging

import pytest

from portal.api import DOCUMENTED_MESSAGES, ApiFailure, ApiRefusal, ApiUnavailable, ErrorCode
from portal.api.errors import error_from_answer
from tests.support.fake_api import TOKEN, Answer, FakeApi, operation_json

# HTTP status of each code, as the API documents it (docs/sandbox.md).
HTTP_STATUS_OF_CODE = {
    0: 400, 1: 410, 2: 401, 3: 403, 4: 403, 5: 404, 6: 404, 7: 400, 8: 400, 9: 422, 10: 415,
    11: 400, 12: 400, 13: 400, 14: 404, 15: 400, 16: 400, 17: 400, 18: 404, 19: 400, 20: 400,
    21: 400, 22: 400, 23: 400, 24: 400, 25: 400,
}  # fmt: skip


@pytest.fixture
def api():
    with FakeApi() as fake:
        yield fake


def test_error_messages_cover_the_26_codes_of_the_documentation():
    assert sorted(DOCUMENTED_MESSAGES) == list(range(26))
    assert DOCUMENTED_MESSAGES[5] == "Operation not found"
    assert DOCUMENTED_MESSAGES[13] == "Not found available wallets for withdrawal"


@pytest.mark.parametrize("code", sorted(HTTP_STATUS_OF_CODE))
def test_every_code_is_read_from_the_body(api, code):
    body = {"code": code, "message": f"server words for {code}"}
    api.answer("GET", "/v1/rates", Answer(HTTP_STATUS_OF_CODE[code], body))
    with pytest.raises(ApiRefusal) as caught:
        api.client().get_rates()
    error = caught.value
    assert type(error) is ApiRefusal
    assert (error.code, error.http_status) == (code, HTTP_STATUS_OF_CODE[code])
    assert error.message == f"server words for {code}"
    assert error.errors == {}
    assert error.code is ErrorCode(code)


def test_validation_errors_keep_the_field_messages(api):
    body = {"code": 9, "message": "Validation errors", "errors": {"amount": ["Too small."]}}
    api.answer("POST", "/v1/operations", Answer(422, body))
    with pytest.raises(ApiRefusal) as caught:
        api.client().create_operation("0", "BTC", "A-1")
    assert caught.value.code == 9
    assert caught.value.errors == {"amount": ["Too small."]}
    assert caught.value.raw is not None and '"amount"' in caught.value.raw


def test_error_nested_under_error(api):
    body = {"error": {"code": 8, "message": "Cancel not allowed (operation)"}}
    api.answer("PUT", "/v1/operations/1/cancel", Answer(400, body))
    with pytest.raises(ApiRefusal) as caught:
        api.client().cancel_operation("1")
    assert (caught.value.code, caught.value.message) == (8, "Cancel not allowed (operation)")


def test_message_and_errors_without_code_on_422_is_code_9(api):
    body = {"message": "The given data was invalid.", "errors": {"wallet": "Required."}}
    api.answer("POST", "/v1/withdraw", Answer(422, body))
    with pytest.raises(ApiRefusal) as caught:
        api.client().withdraw("1", "BTC", "tb1qaddress")
    assert caught.value.code == 9
    assert caught.value.message == "The given data was invalid."
    assert caught.value.errors == {"wallet": ["Required."]}


def test_code_sent_as_a_string(api):
    api.answer("GET", "/v1/vouchers/9", Answer(404, {"code": "14", "message": "Gone"}))
    with pytest.raises(ApiRefusal) as caught:
        api.client().get_voucher("9")
    assert caught.value.code == 14


@pytest.mark.parametrize(
    ("call", "method", "path", "code"),
    [
        (lambda c: c.get_operation("1"), "GET", "/v1/operations/1", 5),
        (lambda c: c.cancel_operation("1"), "PUT", "/v1/operations/1/cancel", 5),
        (lambda c: c.link_transactions("1", ["2"]), "PUT", "/v1/operations/1/link-transactions", 5),
        (lambda c: c.get_transaction("1"), "GET", "/v1/transactions/1", 6),
        (lambda c: c.get_voucher("1"), "GET", "/v1/vouchers/1", 14),
        (lambda c: c.cancel_voucher("1"), "PUT", "/v1/vouchers/1/cancel", 14),
        (lambda c: c.get_cross_exchange("1"), "GET", "/v1/cross-exchanges/1", 18),
        (lambda c: c.cancel_cross_exchange("1"), "PUT", "/v1/cross-exchanges/1/cancel", 18),
        (lambda c: c.list_operations(), "GET", "/v1/operations", 0),
    ],
)
@pytest.mark.parametrize("body", ["", "<html><body>Not Found</body></html>"])
def test_bare_404_means_the_resource_is_not_found(api, call, method, path, code, body):
    api.answer(method, path, Answer(404, body))
    with pytest.raises(ApiRefusal) as caught:
        call(api.client())
    assert (caught.value.code, caught.value.http_status) == (code, 404)
    assert caught.value.message == DOCUMENTED_MESSAGES[code]
    assert caught.value.raw == body


@pytest.mark.parametrize(
    ("status", "code"), [(401, 2), (410, 1), (415, 10), (422, 9), (400, 0), (403, 0), (429, 0)]
)
def test_bodies_without_json_are_mapped_by_http_status(api, status, code):
    api.answer("GET", "/v1/ping", Answer(status, "<h1>nope</h1>"))
    with pytest.raises(ApiRefusal) as caught:
        api.client().ping()
    assert type(caught.value) is ApiRefusal
    assert (caught.value.code, caught.value.http_status) == (code, status)
    assert caught.value.raw == "<h1>nope</h1>"


@pytest.mark.parametrize(("status", "timeout"), [(500, False), (502, False), (504, True)])
def test_5xx_is_unavailable_even_with_an_error_body(api, status, timeout):
    api.answer("POST", "/v1/vouchers", Answer(status, {"code": 15, "message": "x"}))
    with pytest.raises(ApiUnavailable) as caught:
        api.client().create_voucher("1", "BTC")
    error = caught.value
    assert (error.http_status, error.timeout, error.request_sent) == (status, timeout, True)
    assert not isinstance(error, ApiRefusal)  # siblings: a catch of refusals misses it


@pytest.mark.parametrize(
    "body",
    [
        '{"data": {"id": "42", "amou',  # truncated
        "<html>maintenance</html>",
        "[1, 2, 3]",
        '{"data": {"id": "42"}}',  # required fields missing
        '{"data": ' + '{"amount": NaN}' + "}",
    ],
)
def test_garbage_on_a_success_status_is_unavailable(api, body):
    api.answer("GET", "/v1/operations/42", Answer(200, body, content_type="application/json"))
    with pytest.raises(ApiUnavailable) as caught:
        api.client().get_operation("42")
    error = caught.value
    assert (error.http_status, error.timeout, error.request_sent) == (200, False, True)
    assert error.raw == body


def test_wrong_type_in_a_record_names_the_field(api):
    body = {"data": operation_json(amount="twelve")}
    api.answer("GET", "/v1/operations/42", Answer(200, body))
    with pytest.raises(ApiUnavailable, match=r"Operation\.amount"):
        api.client().get_operation("42")


def test_a_redirect_is_not_followed(api):
    api.answer("GET", "/v1/ping", Answer(302, "", content_type="text/plain"))
    with pytest.raises(ApiUnavailable) as caught:
        api.client().ping()
    assert caught.value.http_status == 302
    assert api.count("GET", "/v1/ping") == 1


def test_the_token_never_shows_in_errors_or_logs(api, caplog):
    echoed = f"<pre>Authorization: Bearer {TOKEN}</pre>"
    api.answer("GET", "/v1/ping", Answer(401, echoed))
    api.answer("GET", "/v1/rates", Answer(500, echoed))
    client = api.client()
    caplog.set_level(logging.DEBUG, logger="portal.api")
    errors = []
    for call in (client.ping, client.get_rates):
        with pytest.raises(ApiFailure) as caught:
            call()
        errors.append(caught.value)
    for error in errors:
        for text in (str(error), repr(error), error.message, error.raw or ""):
            assert TOKEN not in text
        assert "••••" in (error.raw or "")
    assert caplog.records, "failures are logged"
    assert TOKEN not in caplog.text
    assert TOKEN not in repr(client)


def test_control_characters_are_dropped_from_the_apis_words():
    """They are shown, audited and stored: PostgreSQL cannot keep a NUL byte."""
    raw = (
        '{"code": 9, "message": "Bad\\u0000 input",'
        ' "errors": {"amount\\u0001": ["Too\\u001b big"]}}'
    )
    error = error_from_answer(422, raw)
    assert error.message == "Bad input"
    assert error.errors == {"amount": ["Too big"]}

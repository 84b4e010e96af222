"""Every page handles a failed API call the same way (`portal.web.api_errors.handle_api_error`)."""

from __future__ import annotations

import pytest
from werkzeug.exceptions import HTTPException
from wtforms import Form, StringField

from portal.api import DOCUMENTED_MESSAGES, ApiRefusal, ApiUnavailable, ErrorCode
from portal.web.api_errors import (
    NOTHING_SENT,
    STATE_CONFLICTS,
    UPSTREAM_TROUBLE,
    Check,
    handle_api_error,
)
from portal.web.error_messages import ERROR_MESSAGES, error_message


class AmountForm(Form):
    amount = StringField("Amount")
    code = StringField("Code")


def test_a_refusal_and_no_answer_are_siblings_never_confused():
    assert not issubclass(ApiUnavailable, ApiRefusal)
    assert not issubclass(ApiRefusal, ApiUnavailable)


def test_the_26_codes_are_named_and_each_has_one_sentence_for_people():
    assert [code.value for code in ErrorCode] == list(range(26))
    assert set(ERROR_MESSAGES) == set(ErrorCode) == set(DOCUMENTED_MESSAGES)
    assert ErrorCode(99) is ErrorCode.SOMETHING_WENT_WRONG, "an undocumented code"
    assert error_message(99) == ERROR_MESSAGES[ErrorCode.SOMETHING_WENT_WRONG]


@pytest.mark.parametrize("code", sorted(set(ErrorCode) - UPSTREAM_TROUBLE))
def test_a_refused_form_is_422_and_a_state_that_forbids_the_action_409(code):
    refused = handle_api_error(ApiRefusal(code), AmountForm())
    assert refused.status == (409 if code in STATE_CONFLICTS else 422)
    assert refused.error == ERROR_MESSAGES[code]


@pytest.mark.parametrize("code", sorted(UPSTREAM_TROUBLE))
def test_credentials_bans_and_the_apis_own_trouble_go_to_the_502_page(code):
    with pytest.raises(ApiRefusal):  # the application's handler: 502, a link to the settings
        handle_api_error(ApiRefusal(code), AmountForm())


def test_field_messages_go_next_to_their_fields_the_rest_above_the_form():
    form = AmountForm()
    refusal = ApiRefusal(9, errors={"amount": ["Too small."], "wallet": ["Unknown."]})
    refused = handle_api_error(refusal, form)
    assert form.amount.errors == ["Too small."]
    assert refused.status == 422
    assert refused.error == f"{ERROR_MESSAGES[ErrorCode.VALIDATION_ERRORS]} Unknown."


def test_a_refusal_about_one_field_can_be_said_next_to_it():
    form = AmountForm()
    refused = handle_api_error(ApiRefusal(ErrorCode.VOUCHER_NOT_PAID_OFF), form, at=form.code)
    assert refused.error is None
    assert form.code.errors == [ERROR_MESSAGES[ErrorCode.VOUCHER_NOT_PAID_OFF]]


def test_a_request_that_never_left_shows_the_form_again(app):
    with app.test_request_context():
        refused = handle_api_error(ApiUnavailable("refused", request_sent=False), AmountForm())
        slow = handle_api_error(ApiUnavailable("slow", timeout=True), AmountForm())
    assert (refused.status, refused.error) == (502, NOTHING_SENT)
    assert slow.status == 504


@pytest.mark.parametrize(("timeout", "status"), [(False, 502), (True, 504)])
def test_a_lost_answer_is_outcome_unknown_with_where_to_check(app, timeout, status):
    lost = ApiUnavailable("no answer", timeout=timeout, request_sent=True)
    with (
        app.test_request_context("/vouchers/1/cancel", method="POST"),
        pytest.raises(HTTPException) as aborted,
    ):
        handle_api_error(lost, AmountForm(), Check("the voucher", "/vouchers/1"))
    response = aborted.value.get_response()
    assert response.status_code == status
    page = response.get_data(as_text=True)
    assert "Outcome unknown" in page and "check the voucher before you try again" in page
    assert 'href="/vouchers/1"' in page

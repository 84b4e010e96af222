"""An owner's decision on an approval, and the requester's withdrawal of it."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import SubmitField

from portal.web.fields import CodeField


class ApproveForm(FlaskForm):
    """An approval sends money: a fresh second factor (a passkey when the owners require one)."""

    code = CodeField()
    submit = SubmitField("Approve")


class RejectForm(FlaskForm):
    submit = SubmitField("Reject")


class WithdrawRequestForm(FlaskForm):
    submit = SubmitField("Withdraw the request")


class CancelChangeForm(FlaskForm):
    submit = SubmitField("Cancel the change")

"""The operation page's QR code of the payment link: drawn once per link, not on every poll."""

from __future__ import annotations

from portal.payments.pages.operations.routes import qr_code

LINK = "https://pay.example/checkout/abc123"
OTHER = "https://pay.example/checkout/def456"


def test_a_payment_link_is_drawn_once_however_often_its_page_asks():
    qr_code.cache_clear()
    first = qr_code(LINK)
    assert first.startswith("data:image/svg+xml")
    assert qr_code(LINK) == first
    assert qr_code.cache_info().hits == 1
    assert qr_code(OTHER) != first

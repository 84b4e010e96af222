"""Signed webhooks to the merchant's shop (issue 15: to build)."""


def deliver_due() -> None:
    """Send every delivery whose time has come."""

"""E-mail to people (issue 15: to build)."""


def send_due() -> None:
    """Send every e-mail that is due."""

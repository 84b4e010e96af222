"""The mirror of each connected merchant's operations and transactions (issue 15: to build)."""


def sync_due() -> None:
    """Sync every merchant whose interval has passed."""

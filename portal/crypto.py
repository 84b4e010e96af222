"""Encryption of stored secrets under `PORTAL_TOKEN_KEYS` (the first key encrypts).

The secrets are the merchants' API tokens, the users' two-factor (TOTP) secrets, the webhook
signing secrets and the tokens of unclaimed refund links. Every column that holds one is named
`*_encrypted`: `rotate-keys` finds them by that name (`encrypted_columns`), so a column added
later is rotated without being listed.
"""

from __future__ import annotations

import sqlalchemy as sa
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from flask import current_app

from portal import database
from portal.extensions import db

ENCRYPTED_SUFFIX = "_encrypted"
UNREADABLE = (
    "cannot be decrypted with any key of PORTAL_TOKEN_KEYS; was a key removed before "
    "`rotate-keys` ran?"
)


class TokenKeyError(RuntimeError):
    """A stored secret cannot be decrypted with any configured key."""


def cipher() -> MultiFernet:
    """A MultiFernet over the configured keys, newest first."""
    return MultiFernet([Fernet(key) for key in current_app.config["TOKEN_KEYS"]])


def encrypt(plaintext: str) -> str:
    return cipher().encrypt(plaintext.encode()).decode()


def decrypt(ciphertext: str) -> str:
    try:
        return cipher().decrypt(ciphertext.encode()).decode()
    except InvalidToken as error:
        raise TokenKeyError(f"A stored secret {UNREADABLE}") from error


def encrypted_columns() -> list[sa.Column]:
    """Every column of the schema that holds a secret encrypted here, table by table."""
    database.import_every_model()
    return [
        column
        for table in db.metadata.sorted_tables
        for column in table.columns
        if column.name.endswith(ENCRYPTED_SUFFIX)
    ]


def rotate_every_column() -> dict[str, int]:
    """Re-encrypt every stored secret under the newest key, in one transaction; how many values
    of each column (`table.column`). A value changed meanwhile (a secret rotated by its owner)
    is left as it is: it was encrypted under the newest key already."""
    rotator = cipher()
    counts = {}
    for column in encrypted_columns():
        name = f"{column.table.name}.{column.name}"
        stored = db.session.scalars(sa.select(column).where(column.is_not(None))).all()
        try:
            changes = [
                {"stored": text, "rotated": rotator.rotate(text.encode()).decode()}
                for text in stored
            ]
        except InvalidToken as error:
            db.session.rollback()
            raise TokenKeyError(f"A value of {name} {UNREADABLE}") from error
        if changes:
            db.session.execute(
                sa.update(column.table)
                .where(column == sa.bindparam("stored"))
                .values({column.name: sa.bindparam("rotated")}),
                changes,
            )
        counts[name] = len(changes)
    db.session.commit()
    return counts

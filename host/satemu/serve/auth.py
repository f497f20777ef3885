# SPDX-License-Identifier: BSD-2-Clause
"""The lab console's token: made once, shown once, kept only as a salted scrypt hash in the
server's data folder (``token.scrypt``, mode 0600)."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

TOKEN_FILE = "token.scrypt"
# scrypt's cost: about 50 ms a check here, so that a stolen hash is slow to guess; a token that
# passed is remembered by its SHA-256 for the server's life, so requests do not pay it again.
N, R, P = 1 << 14, 8, 1


class TokenError(ValueError):
    """A token file that cannot be read as one; the message is one line."""


def hash_token(token: str, salt: bytes | None = None) -> str:
    """``token``'s stored form: ``scrypt$N$R$P$salt$hash`` (hex)."""
    salt = salt if salt is not None else os.urandom(16)
    digest = hashlib.scrypt(token.encode(), salt=salt, n=N, r=R, p=P, dklen=32)
    return f"scrypt${N}${R}${P}${salt.hex()}${digest.hex()}"


def verify(token: str, stored: str) -> bool:
    """Whether ``token`` is the one ``stored`` (``hash_token``'s form) was made from."""
    try:
        kind, n, r, p, salt, digest = stored.strip().split("$")
        if kind != "scrypt":
            return False
        got = hashlib.scrypt(token.encode(), salt=bytes.fromhex(salt), n=int(n), r=int(r),
                             p=int(p), dklen=len(digest) // 2)
    except (ValueError, MemoryError):
        return False
    return hmac.compare_digest(got.hex(), digest)


def new_token(folder: Path) -> str:
    """A fresh token: its hash replaces ``folder``'s token file (mode 0600); the token itself is
    returned, to be shown once."""
    token = secrets.token_urlsafe(32)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / TOKEN_FILE
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(hash_token(token) + "\n")
    os.replace(tmp, path)
    return token


class Tokens:
    """The token a request must carry to change a box or run an experiment."""

    def __init__(self, stored: str | None):
        self.stored = stored
        self._passed: set[bytes] = set()

    @classmethod
    def from_folder(cls, folder: Path) -> "Tokens":
        path = folder / TOKEN_FILE
        if not path.exists():
            return cls(None)
        text = path.read_text(errors="replace").strip()
        if not text.startswith("scrypt$") or text.count("$") != 5:
            raise TokenError(f"{path}: not a token hash; make one with satemu serve --new-token")
        return cls(text)

    @property
    def configured(self) -> bool:
        return self.stored is not None

    def check(self, token: str | None) -> bool:
        if self.stored is None or not token or len(token) > 256:
            return False
        key = hashlib.sha256(token.encode()).digest()
        if key in self._passed:
            return True
        if verify(token, self.stored):
            self._passed.add(key)
            return True
        return False

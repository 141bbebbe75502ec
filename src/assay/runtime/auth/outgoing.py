"""The credential a service sends when it calls another one (the planner calling the resolver).

A token file is read again when it changes on disk (checked at most once a
second), so a rotated token is picked up without a restart. The token is sent
as ``authorization: Bearer …`` metadata and never logged.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from assay.runtime.auth.gate import AUTHORIZATION_KEY

_RECHECK_SECONDS = 1.0


def read_token(path: Path) -> str:
    """The token in ``path`` (surrounding whitespace dropped); ValueError when unusable."""
    try:
        token = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot read token file {path}: {error}") from None
    if not token or any(c.isspace() for c in token):
        raise ValueError(f"token file {path} does not hold one token")
    return token


class TokenFile:
    """A bearer token kept in a file; ``metadata()`` is what to send with a call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._token = read_token(path)
        self._mtime = self._stat()
        self._checked = time.monotonic()

    def _stat(self) -> int:
        try:
            return os.stat(self.path).st_mtime_ns
        except OSError:
            return -1

    def metadata(self) -> tuple[tuple[str, str], ...]:
        moment = time.monotonic()
        if moment - self._checked >= _RECHECK_SECONDS:
            self._checked = moment
            mtime = self._stat()
            if mtime != self._mtime:
                # A file being rewritten keeps the token that was good.
                with contextlib.suppress(ValueError):
                    self._token = read_token(self.path)
                    self._mtime = mtime
        return ((AUTHORIZATION_KEY, f"Bearer {self._token}"),)

"""What a server and a client both need to know about a connection, kept on neutral ground.

The client library imports nothing from the server side, and the server's own
outgoing calls (the planner calling the resolver) obey the same rules, so the
two rules they share live here, once:

- whether a gRPC target is this machine only (plaintext is tolerated there,
  and nowhere else, when a credential is involved);
- how a bearer token is read from a file and sent: ``authorization: Bearer …``
  metadata, the file read again whenever it changes so a rotated token is
  picked up without a restart. A token is never logged or put in a ``repr``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import threading
from pathlib import Path

AUTHORIZATION_KEY = "authorization"
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "ip6-loopback"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address, IPv6 possibly in brackets) is this machine only."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def target_host(target: str) -> str:
    """The host part of a gRPC target such as ``localhost:50051`` or ``[::1]:50051``."""
    rest = target.split("///", 1)[-1] if "///" in target else target
    rest = rest.removeprefix("ipv4:").removeprefix("ipv6:")
    if rest.startswith("["):
        return rest[1 : rest.find("]")]
    return rest.rsplit(":", 1)[0] if rest.count(":") == 1 else rest


def is_local_target(target: str) -> bool:
    """Whether a gRPC target stays on this machine: a Unix socket, or a loopback host."""
    if target.startswith(("unix:", "unix-abstract:")):
        return True
    return is_loopback(target_host(target))


def check_token(token: str, where: str = "the token") -> str:
    """``token`` without surrounding whitespace; ValueError (never echoing it) when unusable."""
    token = token.strip()
    if not token or any(c.isspace() for c in token) or not token.isascii():
        raise ValueError(f"{where} is not one bearer token (empty, or has spaces or non-ASCII)")
    return token


def read_token(path: Path) -> str:
    """The token in ``path`` (surrounding whitespace dropped); ValueError when unusable."""
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot read token file {path}: {error}") from None
    return check_token(text, f"token file {path}")


def bearer_metadata(token: str) -> tuple[tuple[str, str], ...]:
    """The call metadata that carries ``token``."""
    return ((AUTHORIZATION_KEY, f"Bearer {token}"),)


class TokenFile:
    """A bearer token kept in a file, read again when the file changes.

    The file is checked (one ``stat``) on every use rather than on a timer: a
    stat costs microseconds next to a network call, and a rotated token then
    takes effect on the very next call. While a file is being rewritten (empty,
    unreadable, half a token) the last good token keeps being sent. A file
    unusable at construction is a ValueError, so a bad path fails at once.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp = self._stat()
        self._token = read_token(self.path)

    def __repr__(self) -> str:
        return f"TokenFile({str(self.path)!r})"

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return (info.st_ino, info.st_mtime_ns, info.st_size)

    def token(self) -> str:
        """The current token."""
        stamp = self._stat()
        # gRPC may ask from several threads at once (its credentials plugin runs on core
        # threads); the lock keeps the token and the stamp it was read at together.
        with self._lock:
            if stamp is not None and stamp != self._stamp:
                with contextlib.suppress(ValueError):
                    self._token = read_token(self.path)
                    self._stamp = stamp
            return self._token

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """What to send with a call."""
        return bearer_metadata(self.token())

"""What a server and a client both need to know about a connection, kept on neutral ground.

The client library imports nothing from the server side, and the server's own
outgoing calls (the planner calling the resolver) obey the same rules, so the
two rules they share live here, once:

- whether a gRPC target is this machine only (plaintext is tolerated there,
  and nowhere else, when a credential is involved), for every address a target
  lists, and which name TLS verifies when a target lists several addresses;
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


# gRPC name-resolver schemes whose target lists addresses itself, comma-separated.
ADDRESS_LIST_SCHEMES = ("ipv4:", "ipv6:")
_LOCAL_SCHEMES = ("unix:", "unix-abstract:")
_NAMED_SCHEMES = ("dns:", *ADDRESS_LIST_SCHEMES)


def _host_of(address: str) -> str:
    """The host of one ``host[:port]`` address (IPv6 in brackets, or bare without a port)."""
    if address.startswith("["):
        return address[1 : address.find("]")]
    return address.rsplit(":", 1)[0] if address.count(":") == 1 else address


def target_addresses(target: str) -> tuple[str, ...]:
    """The ``host[:port]`` addresses a gRPC target names, without its scheme.

    ``dns:///resolver:50051`` (or ``dns://DNS-SERVER/resolver:50051``) and a bare
    ``host:port`` name one address, which DNS may turn into several at run time;
    ``ipv4:`` and ``ipv6:`` targets list their addresses, comma-separated
    (``ipv4:127.0.0.1:50061,127.0.0.1:50062``). Empty entries are dropped.
    """
    rest = target.strip()
    for scheme in _NAMED_SCHEMES:
        if rest.startswith(scheme):
            rest = rest.removeprefix(scheme)
            if rest.startswith("//"):  # an authority (a DNS server), then the name
                rest = rest[2:].split("/", 1)[-1] if "/" in rest[2:] else ""
            break
    rest = rest.lstrip("/")
    if not target.strip().startswith(ADDRESS_LIST_SCHEMES):
        return (rest,) if rest else ()
    return tuple(part.strip() for part in rest.split(",") if part.strip())


def target_hosts(target: str) -> tuple[str, ...]:
    """The host of every address of ``target`` (see ``target_addresses``)."""
    return tuple(_host_of(address) for address in target_addresses(target))


def target_host(target: str) -> str:
    """The host part of a one-address gRPC target such as ``localhost:50051`` or
    ``[::1]:50051`` (the first address of a list: rules over a whole target use
    ``target_hosts``)."""
    hosts = target_hosts(target)
    return hosts[0] if hosts else ""


def is_local_target(target: str) -> bool:
    """Whether a gRPC target stays on this machine: a Unix socket, or loopback hosts only.

    A target listing several addresses is local only when every one of them is: one
    remote address among loopback ones would carry the same plaintext off the machine.
    """
    if target.startswith(_LOCAL_SCHEMES):
        return True
    hosts = target_hosts(target)
    return bool(hosts) and all(is_loopback(host) for host in hosts)


def tls_server_name(target: str) -> str | None:
    """The name TLS must verify the server against when gRPC cannot take it from ``target``.

    gRPC checks a server's certificate against the target's authority: the name in
    ``resolver:50051`` or ``dns:///resolver:50051``, the address in
    ``ipv4:10.0.0.5:50051``. An ``ipv4:``/``ipv6:`` list of several addresses has no
    such name (gRPC would check the whole list and fail every handshake), so:
    several addresses of one host verify that host; addresses of different hosts
    return None here and the caller must be told the name (``--resolver-server-name``,
    ``Credentials(server_name=...)``), the one every replica's certificate carries.
    Targets gRPC handles itself also return None: see ``needs_server_name``.
    """
    if not target.strip().startswith(ADDRESS_LIST_SCHEMES):
        return None
    hosts = set(target_hosts(target))
    if len(hosts) != 1:
        return None
    host = hosts.pop()
    return f"[{host}]" if ":" in host else host  # an authority: IPv6 in brackets


def needs_server_name(target: str) -> bool:
    """Whether TLS to ``target`` cannot verify a name unless one is given (see
    ``tls_server_name``): an ``ipv4:``/``ipv6:`` list spanning several hosts."""
    return (
        target.strip().startswith(ADDRESS_LIST_SCHEMES)
        and len(target_addresses(target)) > 1
        and tls_server_name(target) is None
    )


def authority_options(
    target: str, tls: bool, server_name: str | None = None
) -> list[tuple[str, str]]:
    """Channel options that make TLS verify the right name for ``target``: ``server_name``
    when given, else the one host of an address list (``tls_server_name``); nothing for a
    plaintext channel or a target gRPC names itself. ValueError when TLS cannot know the
    name (``needs_server_name``), before any connection is tried."""
    if not tls:
        return []
    name = server_name or tls_server_name(target)
    if name is None and needs_server_name(target):
        raise ValueError(
            f"TLS to {target} needs the server name its certificates carry: the target lists "
            "addresses of several hosts, so gRPC has no name to verify"
        )
    # The :authority every call carries and the name each certificate is checked against.
    return [("grpc.default_authority", name)] if name else []


# The gRPC load-balancing policy of every channel Assay opens: each call goes to the next
# ready address of the target (every address of an ipv4:/ipv6: list, every record DNS
# returns for a dns:/// name), so replicas share the load and a dead one is skipped.
LOAD_BALANCING_CONFIG: list[dict[str, dict[str, str]]] = [{"round_robin": {}}]


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


# The largest message either side sends or accepts, unless told otherwise: servers
# (``--max-message-bytes``, whose reasons are in ``assay.runtime.config``) and clients use the
# same default, so a response the server may build is one its caller may receive.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024

# The longest bearer token a server reads (characters); a longer one is refused as
# CREDENTIALS_INVALID by the server's own check (``runtime.auth.gate``).
MAX_BEARER_TOKEN_CHARS = 16 * 1024
# How much metadata a call may carry, each way. gRPC's own limits are a soft one (8 KiB by
# default) above which it refuses calls at random, more often the nearer they are to the
# hard one (16 KiB), where it refuses them all, as RESOURCE_EXHAUSTED before any handler
# runs: a token within the cap above would be refused now and then. Both limits are set to
# one figure, on servers and clients alike, with room for a token well past the cap and the
# other metadata, so every token up to the cap reaches the server's check and one past it
# gets that check's refusal.
MAX_METADATA_BYTES = 64 * 1024
METADATA_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.max_metadata_size", MAX_METADATA_BYTES),
    ("grpc.absolute_max_metadata_size", MAX_METADATA_BYTES),
)

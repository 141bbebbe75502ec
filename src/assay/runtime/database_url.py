"""What ``--db`` names: a SQLite file or a PostgreSQL database, or a refusal; and how to show it.

It accepts only what it can name: a mistyped URL never becomes a file (password in its name):

- SQLite: a path (``assay.db``, ``/var/lib/assay/a.db``; a name with ``=`` or ``:`` written
  with a directory, ``./a=b.db``), or ``sqlite:///rel.db`` / ``sqlite:////abs.db`` as
  SQLAlchemy writes them;
- PostgreSQL: ``postgresql://…`` or ``postgres://…`` (scheme in any case), with one host or
  several (``h1:5432,h2:5432``, tried in turn; ``target_session_attrs=read-write`` picks the
  primary), or a libpq connection string (``host=db password='a b'``), parsed by libpq's
  rules (``libpq_params``) into the equivalent URL for the driver.

Anything else is refused in one line: another scheme, a scheme-looking prefix
(``postgresql:db``), an invalid connection string, a keyword the driver cannot honour.
``masked`` is the one function that shows a ``--db`` value, passwords as ``***``.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from assay.runtime.config import ConfigurationError

MASK = "***"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_POSTGRES_SCHEMES = frozenset({"postgresql", "postgres"})
# libpq keywords the driver (asyncpg) honours, as libpq spells them.
LIBPQ_KEYWORDS = frozenset(
    {
        "host",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "service",
        "application_name",
        "sslmode",
        "sslcert",
        "sslkey",
        "sslrootcert",
        "sslcrl",
        "sslpassword",
        "sslnegotiation",
        "ssl_min_protocol_version",
        "ssl_max_protocol_version",
        "target_session_attrs",
        "krbsrvname",
        "gsslib",
    }
)
# The servers a session may use, of the hosts a URL lists (the driver's values).
SESSION_ATTRS = ("any", "primary", "standby", "prefer-standby", "read-write", "read-only")
_SECRET_KEYWORDS = ("password", "sslpassword")
_LIBPQ_START = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*\s*=")
_LIBPQ_SECRET = re.compile(r"(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)")
_QUERY_SECRET = re.compile(r"([?&;](?:ssl)?password=)[^&#]*", re.IGNORECASE)
_HINT = (
    "--db takes a SQLite path, sqlite:///PATH, postgresql://USER@HOST/DB or a libpq "
    "'key=value' string"
)


@dataclass(frozen=True)
class DatabaseTarget:
    """The database ``--db`` names: ``engine``, and ``location``: the SQLite file's path or
    the URL the driver connects with (it may hold a password: show ``shown`` instead)."""

    engine: Literal["sqlite", "postgresql"]
    location: str
    shown: str

    @property
    def is_postgres(self) -> bool:
        return self.engine == "postgresql"

    def describe(self) -> str:
        """What start lines say: the engine, then where (passwords masked)."""
        if self.engine == "sqlite":
            return f"SQLite {Path(self.location).absolute()}"
        return f"PostgreSQL {self.shown}"


def masked(value: str) -> str:
    """``value`` with every password in it replaced by ``***``: a URL's userinfo password,
    a ``password=``/``sslpassword=`` query parameter and a libpq ``password`` keyword, in
    start lines and error messages alike. Strings ``--db`` refuses are masked too, since
    the refusal quotes them back."""
    if _URL.match(value):
        scheme, rest = value.split("://", 1)
        at = rest.rfind("@")
        if at >= 0 and ":" in rest[:at]:
            user = rest[:at].split(":", 1)[0]
            rest = f"{user}:{MASK}{rest[at:]}"
        return _QUERY_SECRET.sub(lambda m: m.group(1) + MASK, f"{scheme}://{rest}")
    return _LIBPQ_SECRET.sub(lambda m: m.group(1) + MASK, value)


def _refuse(value: str, why: str) -> ConfigurationError:
    return ConfigurationError(f"--db {masked(value)!r}: {why}; {_HINT}")


def libpq_params(text: str) -> list[tuple[str, str]]:
    """The ``keyword = value`` pairs of a libpq connection string, by libpq's rules: spaces
    around ``=`` are optional; a value is single-quoted to hold spaces or be empty; inside a
    value a backslash escapes the next character (``\\'``, ``\\\\``). ValueError names what
    is wrong."""
    pairs: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i == n:
            return pairs
        start = i
        while i < n and not text[i].isspace() and text[i] != "=":
            i += 1
        keyword = text[start:i]
        while i < n and text[i].isspace():
            i += 1
        if i == n or text[i] != "=":
            raise ValueError(f"missing '=' after {keyword!r}")
        i += 1
        while i < n and text[i].isspace():
            i += 1
        value: list[str] = []
        if i < n and text[i] == "'":
            i += 1
            while True:
                if i == n:
                    raise ValueError(f"unterminated quoted value of {keyword!r}")
                if text[i] == "\\" and i + 1 < n:
                    value.append(text[i + 1])
                    i += 2
                elif text[i] == "'":
                    i += 1
                    break
                else:
                    value.append(text[i])
                    i += 1
        else:
            while i < n and not text[i].isspace():
                if text[i] == "\\":  # escapes the next character; a trailing one is dropped
                    i += 1
                    if i == n:
                        break
                value.append(text[i])
                i += 1
        pairs.append((keyword, "".join(value)))


def _check_host(host: str, position: str) -> None:
    """ValueError naming ``host`` (``HOST``, ``HOST:PORT``, ``[V6]:PORT``; ``position``
    says which of several) when its port is not a number from 1 to 65535."""
    try:
        port = urllib.parse.urlsplit(f"//{host}").port
    except ValueError as error:
        raise ValueError(f"{position}{host!r}: {error}") from None
    if port == 0:
        raise ValueError(f"{position}{host!r}: port 0")
    if not host or host.startswith(":"):
        raise ValueError(f"{position}{host!r}: no host name")


def _bad_session_attrs(given: str) -> str:
    return f"target_session_attrs={given!r} is none of {', '.join(SESSION_ATTRS)}"


def _postgres_url(value: str, rest: str) -> DatabaseTarget:
    url = f"postgresql://{rest}"
    try:
        parts = urllib.parse.urlsplit(url)
        hosts = parts.netloc.rpartition("@")[2]
        # Several hosts (``h1:p1,h2:p2``), tried in turn by the driver: each is checked.
        if "," in hosts:
            named = hosts.split(",")
            for number, host in enumerate(named, 1):
                _check_host(host, f"host {number} of {len(named)} ")
        elif hosts:
            parts.port  # noqa: B018 -- raises ValueError for a port that is not a number
        if parts.query:
            query = urllib.parse.parse_qs(parts.query, strict_parsing=True)
            for attrs in query.get("target_session_attrs", []):
                if attrs not in SESSION_ATTRS:
                    raise ValueError(_bad_session_attrs(attrs))
    except ValueError as error:
        raise _refuse(value, f"not a valid PostgreSQL URL ({error})") from None
    return DatabaseTarget("postgresql", url, masked(value))


def _sqlite_url(value: str, rest: str) -> DatabaseTarget:
    if not rest.startswith("/") or "?" in rest or "#" in rest:
        raise _refuse(value, "a SQLite URL is sqlite:///PATH, with no host and no options")
    path = urllib.parse.unquote(rest[1:])
    if not path:
        raise _refuse(value, "the SQLite URL names no file")
    return DatabaseTarget("sqlite", path, path)


def _libpq(value: str) -> DatabaseTarget:
    try:
        pairs = libpq_params(value)
    except ValueError as error:
        raise _refuse(value, f"not a valid libpq connection string ({error})") from None
    for keyword, given in pairs:
        if keyword not in LIBPQ_KEYWORDS:
            raise _refuse(value, f"unsupported connection keyword {keyword!r}")
        if keyword == "target_session_attrs" and given not in SESSION_ATTRS:
            raise _refuse(value, _bad_session_attrs(given))
    query = urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)
    return DatabaseTarget("postgresql", f"postgresql://?{query}", masked(value))


def parse_database_url(value: str) -> DatabaseTarget:
    """The database ``value`` (``--db``) names; ConfigurationError (one line, passwords
    masked) when it names none (module docstring)."""
    if not value.strip():
        raise _refuse(value, "it is empty")
    scheme = _SCHEME.match(value)
    if scheme is not None:
        name = scheme.group(1).lower()
        after = value[scheme.end() :]
        if not after.startswith("//"):
            raise _refuse(
                value, f"{scheme.group(1)}: looks like a URL scheme (write a file as ./NAME)"
            )
        if name in _POSTGRES_SCHEMES:
            return _postgres_url(value, after[2:])
        if name == "sqlite":
            return _sqlite_url(value, after[2:])
        raise _refuse(value, f"unsupported database {scheme.group(1)}://")
    if _LIBPQ_START.match(value) or (
        "=" in value and any(c.isspace() for c in value) and not value.startswith(("/", ".", "~"))
    ):
        return _libpq(value)
    return DatabaseTarget("sqlite", value, value)

"""Page tokens, one scheme for every list RPC: opaque, bound to the query that issued them.

A token is the last key of the previous page plus a fingerprint of the query
(the listing's name and its filters). A token from another query, or one that
was edited, is refused with INVALID_PAGE_TOKEN rather than silently restarting
or skipping rows. Keys are strings; ``int_key`` and ``split_key`` read back the
integer and (name, number) keys some listings page by, and ``page`` pages an
in-memory sequence by position.

A page is bounded by bytes as well as by count: fifty cases of a megabyte and a
half each make a response gRPC refuses to send (a bare RESOURCE_EXHAUSTED), so
a listing whose items can be large keeps only as many as fit in ``page_bytes``
of the server's largest message (``fitting``) and gives the token of the rest.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import TypeVar

from assay.errors import Reason, invalid_field

T = TypeVar("T")

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
# A page's items fill at most this share of the largest message; the rest is room for the
# response's other fields and the items' own framing, which the sizes measured leave out.
PAGE_BYTES_DIVISOR = 2


def page_bytes(max_message_bytes: int) -> int:
    """How many bytes of items one page may hold under a ``max_message_bytes`` limit."""
    return max(1, max_message_bytes // PAGE_BYTES_DIVISOR)


def fitting(sizes: Iterable[int], budget: int) -> int:
    """How many leading items, of ``sizes`` in order (read lazily, so only the items kept
    and the first left out are measured), fit in ``budget`` bytes: at least one, so every
    page moves the listing on."""
    total = 0
    count = 0
    for size in sizes:
        total += size
        if count and total > budget:
            break
        count += 1
    return count


def bad(path: str, description: str) -> Exception:
    return invalid_field(Reason.INVALID_FIELD, path, description)


def page_size(value: int, path: str = "page_size", maximum: int = MAX_PAGE_SIZE) -> int:
    """0 means the default; negative or above ``maximum`` is refused."""
    if value < 0:
        raise bad(path, "must not be negative")
    if value > maximum:
        raise bad(path, f"must be at most {maximum}")
    return value or min(DEFAULT_PAGE_SIZE, maximum)


def _fingerprint(query: str) -> str:
    return hashlib.sha256(query.encode("utf-8")).hexdigest()[:16]


def encode_token(query: str, after: str) -> str:
    if not after:
        return ""
    raw = json.dumps({"q": _fingerprint(query), "a": after}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def decode_token(query: str, token: str, path: str = "page_token") -> str:
    """The key to continue after ("" for the first page)."""
    if not token:
        return ""
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        fingerprint, after = data["q"], data["a"]
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeError):
        raise invalid_field(
            Reason.INVALID_PAGE_TOKEN, path, "is not a page token issued by this server"
        ) from None
    if fingerprint != _fingerprint(query) or not isinstance(after, str) or not after:
        raise invalid_field(Reason.INVALID_PAGE_TOKEN, path, "was issued for a different query")
    return after


def _bad_token(path: str) -> Exception:
    return invalid_field(
        Reason.INVALID_PAGE_TOKEN, path, "is not a page token issued by this server"
    )


def join_key(name: str, number: int) -> str:
    """A composite (id, number) key, e.g. (case, revision)."""
    return json.dumps([name, number], separators=(",", ":"))


def split_key(key: str, path: str = "page_token") -> tuple[str, int]:
    try:
        name, number = json.loads(key)
    except (ValueError, TypeError):
        raise _bad_token(path) from None
    if not isinstance(name, str) or not isinstance(number, int) or isinstance(number, bool):
        raise _bad_token(path)
    return name, number


def int_key(key: str, path: str = "page_token") -> int:
    if not key.isdigit():
        raise _bad_token(path)
    return int(key)


def page(items: Sequence[T], size: int, token: str, query: str) -> tuple[list[T], str]:
    """One page of an in-memory listing of ``items`` (``size`` 0: the rest of it) and the
    token of the next page, empty when none follows. The key is the next item's position."""
    if size < 0:
        raise bad("page_size", "must not be negative")
    start = int_key(decode_token(query, token)) if token else 0
    if start > len(items):
        raise invalid_field(
            Reason.INVALID_PAGE_TOKEN, "page_token", "is beyond the end of the list"
        )
    end = len(items) if size == 0 else min(len(items), start + size)
    return list(items[start:end]), encode_token(query, str(end) if end < len(items) else "")

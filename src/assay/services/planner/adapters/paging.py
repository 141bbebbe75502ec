"""Paging through the probe catalogue.

The catalogue is six entries, but list RPCs page from day one so a growing
list never changes the contract. The page token is opaque to clients: the
base64 of a versioned offset, checked on the way back in.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import TypeVar

from assay.errors import Reason, invalid_field

T = TypeVar("T")

_TOKEN_PREFIX = "probes/v1/"


def encode_token(offset: int) -> str:
    return base64.urlsafe_b64encode(f"{_TOKEN_PREFIX}{offset}".encode()).decode()


def decode_token(token: str) -> int:
    """The offset a token stands for; INVALID_ARGUMENT when this server did not issue it."""
    if not token:
        return 0
    try:
        text = base64.urlsafe_b64decode(token.encode()).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    digits = text.removeprefix(_TOKEN_PREFIX)
    if not text.startswith(_TOKEN_PREFIX) or not digits.isdigit():
        raise invalid_field(Reason.INVALID_PAGE_TOKEN, "page_token", "not issued by this server")
    return int(digits)


def page(items: Sequence[T], page_size: int, token: str) -> tuple[list[T], str]:
    """One page of ``items`` and the token of the next (empty when none follows)."""
    if page_size < 0:
        raise invalid_field(Reason.INVALID_FIELD, "page_size", "must not be negative")
    start = decode_token(token)
    if start > len(items):
        raise invalid_field(Reason.INVALID_PAGE_TOKEN, "page_token", "beyond the end of the list")
    end = len(items) if page_size == 0 else min(len(items), start + page_size)
    return list(items[start:end]), (encode_token(end) if end < len(items) else "")

"""Field checks shared by every request: ids, request ids, bounded strings.

Each check raises ``InvalidArgument`` naming the field path exactly as it is
spelled in the request message, so a client can point at the bad field. A
description says what is wrong with a value, never quoting the value itself.
"""

from __future__ import annotations

import re
import unicodedata

from assay.errors import InvalidArgument, Reason, invalid_field

MAX_ID_LENGTH = 128
MAX_REQUEST_ID_LENGTH = 128
_PRINTABLE = re.compile(r"^[\x21-\x7e]+$")
_TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def bad(path: str, description: str) -> InvalidArgument:
    return invalid_field(Reason.INVALID_FIELD, path, description)


def require_id(value: str, path: str) -> str:
    """A required opaque id: non-empty, at most 128 printable ASCII characters."""
    if not value:
        raise bad(path, "is required")
    if len(value) > MAX_ID_LENGTH or not _PRINTABLE.match(value):
        raise bad(path, f"must be 1-{MAX_ID_LENGTH} printable ASCII characters without spaces")
    return value


def optional_id(value: str, path: str) -> str:
    return require_id(value, path) if value else ""


def check_request_id(value: str, path: str = "request_id") -> str:
    """Optional retry key; when present, 1-128 printable ASCII characters."""
    if value and (len(value) > MAX_REQUEST_ID_LENGTH or not _PRINTABLE.match(value)):
        raise bad(path, f"must be 1-{MAX_REQUEST_ID_LENGTH} printable ASCII characters")
    return value


def require_tenant(value: str, path: str) -> str:
    if not value:
        raise bad(path, "is required")
    if not _TENANT.match(value):
        raise bad(path, "must be 1-128 characters: letters, digits, '.', '_', ':' or '-'")
    return value


def optional_tenant(value: str, path: str) -> str:
    return require_tenant(value, path) if value else ""


def require_text(value: str, path: str, max_length: int) -> str:
    """A required string of bounded length that is not just whitespace."""
    if not value.strip():
        raise bad(path, "is required")
    return bounded_text(value, path, max_length)


def bounded_text(value: str, path: str, max_length: int) -> str:
    """A string of at most ``max_length`` characters; the error gives its length, not it."""
    if len(value) > max_length:
        raise bad(path, f"must be at most {max_length} characters (it has {len(value)})")
    return value


def note_text(value: str, path: str, max_length: int) -> str:
    """Free text a person writes for another (a rationale): bounded, and with no control
    character but line breaks and tabs, so it cannot rewrite a terminal or a log line."""
    bounded_text(value, path, max_length)
    if any(unicodedata.category(c) == "Cc" and c not in "\n\t" for c in value):
        raise bad(path, "must not contain control characters other than line breaks and tabs")
    return value

"""Canonical JSON for digests: the two definitions every hash in adjudication uses.

Gold-label digests, audit-event hashes and case content digests must be reproducible by
anyone holding the rows (an auditor with ``sqlite3`` and a SHA-256 tool), so they are
computed over a documented canonical form, and every digest is spelled by ``text_digest``.
Each record says which form its digest used:

- **v2, RFC 8785 (JCS)** (``jcs``, ``jcs_digest``): what every record written since uses
  (label keys, ``assay.case.v2``, ``assay.gold.v2``), the ``rfc8785`` package's bytes (json's
  C encoder where it provably spells them identically), so any JCS library agrees;
- **v1, Assay's legacy form** (``canonical_json``, ``digest``): sorted keys, no spaces,
  integral floats below 2**53 as integers, other floats as ``repr``; kept so rows written
  before JCS still verify. Audit-event hashes, commitments and idempotency digests call
  ``digest`` on strings, safe integers and ASCII-keyed objects, where v1 and JCS are the same
  bytes (property-tested against ``rfc8785``). Times are spelled by ``times.rfc3339``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import json.encoder
import math
import re
from collections.abc import Mapping
from typing import Any

import rfc8785

DIGEST_PREFIX = "sha256:"
GENESIS_HASH = DIGEST_PREFIX + "0" * 64


_ENCODE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode
# The string encoder ``_ENCODE`` calls for every string (json's C one, when built): calling it
# directly spells a string exactly as ``_ENCODE`` does without the encoder's Python wrapper.
_STRING = json.encoder.encode_basestring


_AS_IS = frozenset({str, int, bool, type(None)})


def _normalized(value: Any) -> Any:
    if type(value) in _AS_IS:
        return value
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("non-finite numbers have no JSON form")
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        return value
    if isinstance(value, dict):
        if all(type(k) is str and type(v) in _AS_IS for k, v in value.items()):
            return value  # the common case (audit payloads): nothing to normalize
        return {str(k): _normalized(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if all(type(v) in _AS_IS for v in value):
            return value  # strings and integers only (answer digests): the encoder takes it
        return [_normalized(v) for v in value]
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def encode_json(value: str) -> str:
    """One JSON string, spelled as ``canonical_json`` (and JCS) spell it."""
    return _STRING(value)


def string_object_json(value: Mapping[str, str]) -> str | None:
    """``canonical_json`` of an object whose keys and values are all strings (audit payloads,
    commitments), spelled out directly; None when one is not a string.

    Every ledger write hashes such an object, and the general path normalizes it and goes
    through the encoder's Python layers first; this spells the same bytes (keys sorted by
    code point, each string as ``_ENCODE`` spells it), which a property test holds equal."""
    for key, item in value.items():
        if type(key) is not str or type(item) is not str:
            return None
    return "{" + ",".join([f"{_STRING(k)}:{_STRING(v)}" for k, v in sorted(value.items())]) + "}"


def _string_list_json(value: list[Any] | tuple[Any, ...]) -> str | None:
    for item in value:
        if type(item) is not str:
            return None
    return "[" + ",".join(map(_STRING, value)) + "]"


def canonical_json(value: Any) -> str:
    """The legacy v1 form: sorted keys, no spaces, integral floats as integers."""
    kind = type(value)
    if kind is str:
        return _STRING(value)
    # Flat strings (audit payloads, answer commitments): spelled directly, same bytes.
    if kind is dict:
        flat = string_object_json(value)
        if flat is not None:
            return flat
    elif kind is list or kind is tuple:
        flat = _string_list_json(value)
        if flat is not None:
            return flat
    return _ENCODE(_normalized(value))


def text_digest(text: str) -> str:
    """``sha256:`` + hex SHA-256 of ``text`` in UTF-8: how every digest here is spelled."""
    return DIGEST_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest(value: Any) -> str:
    """``sha256:`` + hex SHA-256 of the v1 canonical JSON of ``value`` (equal to
    ``jcs_digest`` for strings, safe integers and objects with ASCII keys)."""
    return text_digest(canonical_json(value))


# The doubles JCS spells as integers without loss; a parsed key may hold a larger integer
# (``123456789012345680000`` is how JCS spells a double), which is that double.
_SAFE_INTEGER = 2**53 - 1


def _as_doubles(value: Any) -> Any:
    if type(value) in (str, bool, float) or value is None:
        return value
    if type(value) is int:
        return value if -_SAFE_INTEGER <= value <= _SAFE_INTEGER else float(value)
    if isinstance(value, dict):
        return {k: _as_doubles(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_doubles(v) for v in value]
    return value  # rfc8785 names what it cannot encode


class _NotPlain(Exception):
    """``value`` holds something only ``rfc8785`` spells right (see ``_plain``)."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def _plain_text(text: str) -> bool:
    # A lone surrogate has no UTF-8 form: rfc8785 refuses it, so it takes that path.
    return text.isascii() or _SURROGATE.search(text) is None


def _plain(value: Any) -> Any:
    """``value`` as json's encoder spells it exactly as RFC 8785 does, or ``_NotPlain``.

    The two agree on strings, booleans, null and integers within 2**53 (a double that is
    an integer, as ``google.protobuf.Value`` carries every number, is spelled as that
    integer), and on object key order while keys stay in the BMP: JCS sorts by UTF-16
    code unit, json by code point, which differ only for characters outside it. Other
    numbers (ECMAScript's number spelling) and astral keys go through ``rfc8785``."""
    kind = type(value)
    if kind is str:
        if _plain_text(value):
            return value
        raise _NotPlain
    if kind is bool or value is None:
        return value
    if kind is int or kind is float:
        if -_SAFE_INTEGER <= value <= _SAFE_INTEGER and (kind is int or value.is_integer()):
            return int(value)
        raise _NotPlain
    if kind is dict:
        plain = {}
        for key, item in value.items():
            if type(key) is not str or not _plain_text(key) or (key and max(key) > "\uffff"):
                raise _NotPlain
            plain[key] = _plain(item)
        return plain
    if kind is list or kind is tuple:
        return [_plain(item) for item in value]
    raise _NotPlain


def jcs(value: Any) -> str:
    """RFC 8785 canonical JSON of ``value`` (every number a double, as ``google.protobuf.Value``
    carries it). ValueError for NaN, infinities and anything that is not JSON.

    ``rfc8785`` is pure Python, so what json's C encoder spells identically (``_plain``; a
    differential property test against ``rfc8785`` holds the two equal) goes through that;
    the rest through ``rfc8785`` (``rfc8785_jcs``)."""
    if type(value) is str and _plain_text(value):
        return _STRING(value)  # a JSON string is spelled alike in both forms (property-tested)
    try:
        return _ENCODE(_plain(value))
    except _NotPlain:
        return rfc8785_jcs(value)


def rfc8785_jcs(value: Any) -> str:
    """``jcs`` through the ``rfc8785`` package alone: the reference the fast path is held to."""
    try:
        return rfc8785.dumps(_as_doubles(value)).decode("utf-8")
    except rfc8785.CanonicalizationError as error:
        raise ValueError(str(error)) from None


def jcs_digest(value: Any) -> str:
    """``sha256:`` + hex SHA-256 of the RFC 8785 form of ``value``."""
    return text_digest(jcs(value))


def label_key(label: Any) -> str:
    """The key a new review, resolution or gold label stores for ``label``: its JCS form."""
    return jcs(label)


@functools.lru_cache(maxsize=4096)  # agreement compares many reviews of few distinct labels
def same_label_key(key: str) -> str:
    """A stored label key (v1 or JCS spelling) as JCS, for comparing labels: a review stored
    before JCS (``1e-07``) and one after (``1e-7``) carry the same label. "" stays ""."""
    if not key or key[0] == '"':
        return key  # no label, or a JSON string: both forms spell it alike
    return jcs(json.loads(key))

"""The reliability table file: how it is read, checked and named, wherever it is read.

The resolver fuses with it, the approval service checks a table change against it, the
calibration proposes one, and the CLI reads one to check, approve or apply: each reads a
file ``{"sources": {"kind": reliability, ...}}`` through ``read_table`` or checks a
decoded one with ``parse_table``, so a table one part accepts no other refuses. A bad
table is a ``TableError`` naming the file (or origin) and the entry, never half a table.

``table_digest`` names a table by its content alone: ``sha256:`` + hex SHA-256 of the
RFC 8785 (JCS) form of ``{"sources": table}``, reproducible with any JCS library, so a
file's spelling (``1`` or ``1.0``, key order, spaces) and its other members (a
proposal's ``calibration`` evidence) leave it unchanged.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path

import rfc8785


class TableError(ValueError):
    """A reliability table that cannot be used; the message names its origin and entry."""


def table_digest(reliability: Mapping[str, float]) -> str:
    """``sha256:`` + hex SHA-256 of the JCS form of ``{"sources": reliability}``."""
    canonical = rfc8785.dumps({"sources": {k: float(v) for k, v in reliability.items()}})
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def parse_table(data: object, origin: str) -> dict[str, float]:
    """Validate a decoded table document; every problem names ``origin`` and the entry."""
    if not isinstance(data, dict) or not isinstance(data.get("sources"), dict):
        raise TableError(f'{origin}: expected an object {{"sources": {{"kind": reliability}}}}')
    sources: dict[str, object] = data["sources"]
    if not sources:
        raise TableError(f"{origin}: sources: the table is empty")
    table: dict[str, float] = {}
    for name, raw in sources.items():
        if not name.strip():
            raise TableError(f"{origin}: sources: a source kind name is empty")
        # bool is an int subclass: reject it explicitly, "true" is not a reliability.
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise TableError(f"{origin}: sources.{name}: {raw!r} is not a number")
        value = float(raw)
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise TableError(f"{origin}: sources.{name}: {raw!r} is not a number in [0, 1]")
        table[name] = value
    return table


def read_table(path: str) -> dict[str, float]:
    """The table of the file at ``path``; TableError naming the file and entry."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise TableError(f"{path}: cannot read the reliability table: {reason}") from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, TableError, RecursionError) as error:
        raise TableError(f"{path}: not valid JSON: {error}") from None
    return parse_table(data, path)


def _reject_constant(name: str) -> float:
    raise TableError(f"{name} is not allowed")

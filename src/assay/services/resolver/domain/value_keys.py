"""Canonical value keys: when two asserted values are "the same value".

Claims are grouped by value, so the key must not depend on how a client wrote
the value: object keys are sorted, there are no spaces, and a number is written
the same way however it arrived (``1.0`` and ``1`` are both ``"1"``, because
JSON has one number type and ``google.protobuf.Value`` one double). Values that
JSON cannot carry (NaN, infinities) are not values, and a top-level null asserts
nothing; both are rejected by the caller with the path this module reports.

Scalars dominate real evidence, so they have their own cheap entry points; the
general ``canonical_key`` is only needed for objects and lists. This is the one rule:
the per-claim path, the columnar path (``columnar.input.texts``) and the planner's
guessed outcomes (``planner.wire.foreseen_outcomes``) all key values here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TypeAlias

JsonValue: TypeAlias = "bool | float | str | Mapping[str, JsonValue] | Sequence[JsonValue] | None"

TRUE_KEY = "true"
FALSE_KEY = "false"

_dump_str = json.JSONEncoder(ensure_ascii=False).encode


class UnkeyableValue(ValueError):
    """A value that cannot be keyed; ``path`` is relative to the value (``""`` = the value)."""

    def __init__(self, path: str, description: str) -> None:
        super().__init__(f"{path or 'value'}: {description}")
        self.path = path
        self.description = description


def string_key(value: str) -> str:
    """The key of a string value: its JSON literal."""
    return _dump_str(value)


def number_key(value: float) -> str:
    """The key of a number: integral doubles as integers, others as the shortest repr."""
    if not math.isfinite(value):
        raise UnkeyableValue("", f"{value!r} is not a finite number")
    if value.is_integer():
        # int() also folds -0.0 into 0, so the two zeros are one value.
        return str(int(value))
    return repr(value)


def bool_key(value: bool) -> str:
    return TRUE_KEY if value else FALSE_KEY


def canonical_key(value: JsonValue, path: str = "") -> str:
    """Canonical JSON of any JSON value (nested nulls allowed, NaN/inf never)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return bool_key(value)
    if isinstance(value, int | float):
        try:
            return number_key(float(value))
        except UnkeyableValue as error:
            raise UnkeyableValue(path, error.description) from None
    if isinstance(value, str):
        return string_key(value)
    if isinstance(value, Mapping):
        parts = [
            f"{string_key(k)}:{canonical_key(value[k], f'{path}.{k}' if path else k)}"
            for k in sorted(value)
        ]
        return "{" + ",".join(parts) + "}"
    items = [canonical_key(v, f"{path}[{i}]") for i, v in enumerate(value)]
    return "[" + ",".join(items) + "]"


def top_level_key(value: JsonValue) -> str:
    """The key of a claim's value; a top-level null asserts nothing and is rejected."""
    if value is None:
        raise UnkeyableValue("", "null is not a value a claim can assert")
    return canonical_key(value)


def from_key(key: str) -> JsonValue:
    """The value a key stands for (used to emit one canonical representative per value)."""
    decoded: JsonValue = json.loads(key)
    return decoded

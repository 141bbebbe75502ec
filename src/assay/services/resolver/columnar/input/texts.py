"""Value texts: each distinct JSON text of the ``value`` column, parsed once and keyed.

A semantic has few values, so the column is (or is made) dictionary-encoded and only
its distinct texts are parsed. A text is read as ``Claim.value`` would hold it: JSON has
one number type and ``google.protobuf.Value`` one double, so integers are read as
doubles (``parse_int=float``), and the key is the reference's canonical key
(``value_keys.top_level_key``), so ``1``, ``1.0`` and ``1e0`` are one value, as are two
objects whose keys are written in different orders. What the reference refuses (a
top-level null, NaN or an infinity anywhere) is refused with the same description.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from assay.services.resolver.columnar.input.columns import Ints
from assay.services.resolver.domain import value_keys as vk


@dataclass(frozen=True, slots=True)
class Keyed:
    """Per distinct text: its value code (-1 when it cannot be keyed) and why not."""

    value_of_text: Ints  # text code -> value code (ascending value_key order), or -1
    keys: list[str]  # value code -> value_key, ascending
    problems: dict[int, tuple[str, str]]  # text code -> (sub-path below the value, why)


def key_texts(texts: list[str]) -> Keyed:
    """Key every distinct text; texts with equal keys share one value code."""
    keys: list[str | None] = []
    problems: dict[int, tuple[str, str]] = {}
    for code, text in enumerate(texts):
        try:
            keys.append(_key(text))
        except vk.UnkeyableValue as error:
            problems[code] = (error.path, error.description)
            keys.append(None)
    ordered = sorted({key for key in keys if key is not None})
    position = {key: i for i, key in enumerate(ordered)}
    value_of_text = np.array([-1 if key is None else position[key] for key in keys], dtype=np.int64)
    return Keyed(value_of_text, ordered, problems)


def _key(text: str) -> str:
    try:
        parsed = json.loads(text, parse_int=float)
    except ValueError as error:
        raise vk.UnkeyableValue("", f"not JSON text: {error}") from None
    except RecursionError:
        raise vk.UnkeyableValue("", "not JSON text: nested too deeply") from None
    try:
        key = vk.top_level_key(parsed)
    except RecursionError:
        raise vk.UnkeyableValue("", "nested too deeply") from None
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise vk.UnkeyableValue("", "not valid Unicode (a lone surrogate escape)") from None
    return key

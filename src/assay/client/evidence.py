"""Build ``Evidence`` from plain JSON: files, dicts, and legacy bundles.

Accepted shapes, all in proto JSON (camelCase or the proto field names):

- ``{"claims": [...]}`` — an ``Evidence`` message;
- ``[...]`` — a bare list of claims;
- ``{"items": [...], "confidence": 0.6}`` — a legacy bundle from before claims
  existed. It loads lossily, as the design promises: its unknown keys are
  stripped, ``claims`` defaults to empty, and a ``LEGACY_BUNDLE`` warning says so.

Claims themselves are parsed strictly, one at a time, so an error names the
exact field (``claims[3]: ...``); a typo in a claim is an error, not silently lost data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from assay.v1 import claim_pb2

LEGACY_KEYS = frozenset({"items", "confidence"})


class EvidenceFormatError(ValueError):
    """The JSON cannot be read as evidence: which file, which field, and what is wrong."""

    def __init__(self, source: str, field_path: str, problem: str) -> None:
        where = ": ".join(part for part in (source, field_path) if part)
        super().__init__(f"{where}: {problem}" if where else problem)
        self.source = source
        self.field_path = field_path
        self.problem = problem


@dataclass
class LoadedEvidence:
    """Evidence plus the warnings raised while loading it (legacy bundles, stripped keys)."""

    evidence: claim_pb2.Evidence
    warnings: list[str] = field(default_factory=list)


def claim_from_dict(data: Any, field_path: str = "claim", source: str = "") -> claim_pb2.Claim:
    """One claim from a dict in proto JSON; unknown fields are errors naming ``field_path``."""
    if not isinstance(data, dict):
        raise EvidenceFormatError(
            source, field_path, f"a claim must be a JSON object, not {_kind(data)}"
        )
    claim = claim_pb2.Claim()
    try:
        json_format.ParseDict(data, claim)
    except json_format.ParseError as error:
        # protobuf's message spans lines (it lists every valid field); the first line says it.
        first_line = str(error).splitlines()[0] if str(error) else "not a valid claim"
        raise EvidenceFormatError(source, field_path, first_line) from None
    return claim


def evidence_from_json(data: Any, source: str = "") -> LoadedEvidence:
    """Evidence from decoded JSON in any of the accepted shapes (see module docstring)."""
    if isinstance(data, list):
        claims = data
        warnings: list[str] = []
    elif isinstance(data, dict):
        if "claims" not in data and LEGACY_KEYS & data.keys():
            items = data.get("items")
            count = len(items) if isinstance(items, list) else 0
            stripped = ", ".join(sorted(data.keys()))
            return LoadedEvidence(
                claim_pb2.Evidence(),
                [
                    f"{source or 'evidence'}: legacy {{items, confidence}} bundle loaded lossily: "
                    f"keys stripped ({stripped}), {count} item(s) not converted, claims = []"
                ],
            )
        unknown = sorted(set(data.keys()) - {"claims"})
        warnings = (
            [f"{source or 'evidence'}: unknown keys stripped: {', '.join(unknown)}"]
            if unknown
            else []
        )
        claims = data.get("claims", [])
        if not isinstance(claims, list):
            raise EvidenceFormatError(source, "claims", f"must be a list, not {_kind(claims)}")
    else:
        raise EvidenceFormatError(
            source, "", f"evidence must be an object or a list, not {_kind(data)}"
        )
    evidence = claim_pb2.Evidence(
        claims=[claim_from_dict(c, f"claims[{i}]", source) for i, c in enumerate(claims)]
    )
    return LoadedEvidence(evidence, warnings)


def load_json_file(path: str | Path) -> Any:
    """Decoded JSON from a file; unreadable or invalid files raise ``EvidenceFormatError``."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise EvidenceFormatError(name, "", error.strerror or str(error)) from None
    except UnicodeDecodeError:
        raise EvidenceFormatError(name, "", "not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise EvidenceFormatError(
            name, "", f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None


def load_evidence_file(path: str | Path) -> LoadedEvidence:
    """Evidence from a JSON file; errors name the file and the field."""
    return evidence_from_json(load_json_file(path), source=str(path))


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else "null"
    )

"""A reliability table change as an approval's action, beside the acquisition candidate.

A table change is stored where a candidate is: its ``table_digest`` is the candidate
digest (so consuming binds it, and the APPROVAL_REQUESTED and APPROVAL_CONSUMED events
carry it), and the change itself is the candidate's ``detail``, RFC 8785 JSON under one
key, with every other candidate field empty. The approval's content digest covers
``detail``, so an edited table disagrees with the ledger like any edited field.

The table is checked as the resolver checks a table file (``parse_table``) and named as
the resolver names it (``table_digest``): one rule each, never a copy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from assay.errors import FieldViolation
from assay.reliability_table import TableError, parse_table, table_digest
from assay.services.adjudication.domain.approvals import ApprovalCandidate
from assay.services.adjudication.domain.digests import jcs

KEY = "reliabilityTableChange"
# JCS spells integers exactly up to 2**53; a tree size is far below it.
MAX_TREE_SIZE = 2**53


@dataclass(frozen=True)
class TableChange:
    """The table asked for (``sources`` by kind), the digest it claims, and the checkpoint
    a calibration proposed it at (0 when none)."""

    table_digest: str
    sources: tuple[tuple[str, float], ...]
    tree_size: int

    @classmethod
    def of(cls, table_digest: str, sources: Mapping[str, float], tree_size: int) -> TableChange:
        return cls(table_digest, tuple(sorted(sources.items())), tree_size)


def problems(change: TableChange) -> list[FieldViolation]:
    """What makes ``change`` unusable: a table the resolver would refuse, a digest that is
    not the table's, a tree size out of range."""
    found: list[FieldViolation] = []
    table = dict(change.sources)
    try:
        parse_table({"sources": table}, "table_change")
    except TableError as error:
        found.append(FieldViolation("table_change.sources", str(error)))
    else:
        if change.table_digest != table_digest(table):
            found.append(
                FieldViolation(
                    "table_change.table_digest",
                    'is not the digest of this table ("sha256:" + hex SHA-256 of the RFC 8785 '
                    'form of {"sources": ...}, as the resolver names it)',
                )
            )
    if not 0 <= change.tree_size < MAX_TREE_SIZE:
        found.append(FieldViolation("table_change.tree_size", "must be 0 or a ledger tree size"))
    return found


def as_candidate(change: TableChange) -> ApprovalCandidate:
    """The change stored as a candidate: its digest as the candidate digest, itself as the
    detail, nothing else (``problems`` must be empty: JCS refuses NaN)."""
    body = {
        "tableDigest": change.table_digest,
        "sources": dict(change.sources),
        "treeSize": change.tree_size,
    }
    return ApprovalCandidate("", "", "", "", (), (), (), change.table_digest, jcs({KEY: body}))


def stored_change(candidate: ApprovalCandidate) -> TableChange | None:
    """The table change ``candidate`` stores, or None for an acquisition candidate (which
    always names a probe)."""
    if candidate.probe or not candidate.detail.startswith('{"' + KEY + '"'):
        return None
    try:
        body = json.loads(candidate.detail)[KEY]
        sources = {str(k): float(v) for k, v in body["sources"].items()}
        return TableChange.of(str(body["tableDigest"]), sources, int(body["treeSize"]))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None

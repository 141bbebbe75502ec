"""What ``assay db migrate`` and the adjudication service share: the report and the failures.

The command reaches the service only through the registry, so the values crossing that
boundary live here, beside the runtime's other plumbing: the tables copied with their row
counts, and the transparency-log tree over the source's ledger and over the target's (size
and root each, and whether a consistency proof between them verifies). ``MoveRefused``: the
copy never started, or was rolled back, for a reason the operator can act on (exit 1);
``MoveUnverified``: the target did not verify after the copy, which was rolled back (exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass


class MoveRefused(ValueError):
    """The databases cannot be moved as asked; the message is one line, passwords masked."""


class MoveUnverified(RuntimeError):
    """The copy did not verify (chain or tree); nothing was committed to the target."""


@dataclass(frozen=True)
class MoveReport:
    """A committed, verified copy: rows per table, in copy order, and both trees."""

    schema_version: int
    tables: tuple[tuple[str, int], ...]
    source_size: int
    source_root: str
    target_size: int
    target_root: str
    # The ledger key beside the source (``<db>.ledger-key.pem``) and whether it exists.
    key_file: str
    key_exists: bool

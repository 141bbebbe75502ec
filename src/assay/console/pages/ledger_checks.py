"""The auditor's checks, done here in the console with the log's own algorithms
(``assay.tlog``), as ``assay audit verify --since`` does them: a checkpoint's signature,
a saved checkpoint against today's (the RFC 6962 consistency proof), and one event's chain
hash in today's tree (its inclusion proof). Each check returns a verdict in words, never
raises on what the party being checked sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from assay.tlog.checkpoint import Checkpoint, parse_signed_checkpoint
from assay.tlog.merkle import verify_consistency, verify_inclusion

DIGEST_PREFIX = "sha256:"
MAX_NOTE_BYTES = 16 * 1024


@dataclass(frozen=True)
class Verdict:
    """Whether a check held, and what it found, in words."""

    ok: bool
    said: str


def public_key(pem: str) -> Ed25519PublicKey | None:
    """An Ed25519 public key from PEM (a pinned key, or the server's), else None."""
    try:
        key: Any = serialization.load_pem_public_key(pem.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return None
    return key if isinstance(key, Ed25519PublicKey) else None


def signed(note: str, key: Ed25519PublicKey) -> Checkpoint | str:
    """The checkpoint in ``note`` if ``key`` signed it, else why not."""
    try:
        return parse_signed_checkpoint(note, key, note.split("\n", 1)[0])
    except ValueError as error:
        return str(error)


def consistent(old: Checkpoint, new: Checkpoint, proof: list[bytes]) -> Verdict:
    """Whether ``new`` provably extends ``old`` (the rules of ``assay audit verify``)."""
    if old.origin != new.origin:
        return Verdict(
            False, f"the saved checkpoint is of log {old.origin}, today's of {new.origin}"
        )
    if new.size < old.size:
        return Verdict(False, f"the log shrank: {old.size} events saved, {new.size} now")
    if not verify_consistency(old.size, new.size, old.root, new.root, proof):
        return Verdict(
            False,
            f"the ledger was rewritten: the log at {new.size} events does not extend the "
            f"saved checkpoint of {old.size}",
        )
    return Verdict(True, f"consistent: the log grew from {old.size} to {new.size} events")


def included(chain_hash: str, index: int, proof: list[bytes], tree: Checkpoint) -> Verdict:
    """Whether the event with ``chain_hash`` is leaf ``index`` of the signed ``tree``."""
    try:
        leaf = bytes.fromhex(chain_hash.removeprefix(DIGEST_PREFIX))
    except ValueError:
        return Verdict(False, "the event's hash is not a sha256 digest")
    if not chain_hash.startswith(DIGEST_PREFIX) or not 0 <= index < tree.size:
        return Verdict(False, "the event is not a leaf of the signed tree")
    if not verify_inclusion(leaf, index, tree.size, proof, tree.root):
        return Verdict(False, f"the proof does not place the event in the tree of {tree.size}")
    return Verdict(True, f"included: leaf {index} of the signed tree of {tree.size} events")

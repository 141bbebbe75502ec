"""The audit ledger as a transparency log: an RFC 6962 tree over the committed chain hashes,
and checkpoints signed with the ledger key.

The hash chain proves the ledger to someone who re-reads every row; the tree lets an auditor
who kept only a signed checkpoint (origin, size, root) check later that the ledger only grew
(a consistency proof) and that one event is in it (an inclusion proof). Leaf ``i`` is the
chain hash of event ``i + 1``, so the tree commits to everything the chain does.

The tree lives in memory, rebuilt from the stored events at start and caught up before each
answer from the events after its size. Readers see committed rows only, so a rolled-back
event never becomes a leaf, and a row edited after it became a leaf does not change the tree
(the next checkpoint would then disagree with the rows, which is the point). The origin
(``origin_for``) is ``assay.v1/adjudication/<log id>``, the log id derived from the public
key: stable across restarts and tied to the key, so a verifier that pins the key knows the
origin. The signer's name is the origin, as the C2SP tlog-checkpoint convention suggests.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from assay.errors import Reason, invalid_field
from assay.runtime.logging import get_logger
from assay.services.adjudication.domain.digests import DIGEST_PREFIX
from assay.tlog.checkpoint import (
    Checkpoint,
    NoteSigner,
    load_or_create_signing_key,
)
from assay.tlog.merkle import MerkleTree

ORIGIN_PREFIX = "assay.v1/adjudication/"
KEY_SUFFIX = ".ledger-key.pem"

_log = get_logger("assay.adjudication.transparency")

# (sequence, stored chain hash) of the committed events after a sequence, in order.
ReadHashes = Callable[[int], Awaitable[list[tuple[int, str]]]]


def origin_for(public_key: Ed25519PublicKey) -> str:
    """The log's origin line for a ledger key: the log id is the first 16 hex digits of
    SHA-256 of the raw Ed25519 public key."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return ORIGIN_PREFIX + hashlib.sha256(raw).hexdigest()[:16]


def default_key_path(db_path: str | Path) -> Path:
    """``<db>.ledger-key.pem``: where the key lives when no ``--ledger-signing-key`` is given."""
    db = Path(db_path)
    return db.with_name(db.name + KEY_SUFFIX)


def leaf_data(sequence: int, chain_hash: str) -> bytes:
    """The 32 bytes a stored ``sha256:<hex>`` chain hash stands for."""
    if not chain_hash.startswith(DIGEST_PREFIX):
        raise ValueError(f"audit event {sequence}: hash {chain_hash!r} is not a sha256 digest")
    data = bytes.fromhex(chain_hash.removeprefix(DIGEST_PREFIX))
    if len(data) != 32:
        raise ValueError(f"audit event {sequence}: hash is not 32 bytes")
    return data


@dataclass(frozen=True)
class SignedCheckpoint:
    """A checkpoint and its signed note text."""

    checkpoint: Checkpoint
    note: str


class TransparencyLog:
    """The tree over the committed ledger, and the signer of its checkpoints."""

    def __init__(self, signer: NoteSigner, origin: str, read_hashes: ReadHashes) -> None:
        self.signer = signer
        self.origin = origin
        self._read = read_hashes
        self._tree = MerkleTree()
        # Leaf i's 32 bytes at [32 i, 32 i + 32): what ``disagreeing`` compares reads with
        # (a fifth of what the tree keeps per leaf).
        self._leaves = bytearray()
        self._lock = asyncio.Lock()
        # Why the tree stopped growing ("" while it follows the ledger).
        self.stalled = ""

    @classmethod
    def open(cls, key_path: Path, read_hashes: ReadHashes) -> TransparencyLog:
        key = load_or_create_signing_key(key_path)
        origin = origin_for(key.public_key())
        return cls(NoteSigner(key, origin), origin, read_hashes)

    def public_key_pem(self) -> str:
        return self.signer.public_key_pem()

    async def sync(self) -> int:
        """Append every committed event the tree lacks; the tree's size after.

        A gap in the sequence or a hash that is no digest (a damaged ledger) stops the tree
        there: checkpoints stop advancing, the server keeps running, and VerifyAuditChain
        names the bad event. Nothing is ever appended out of order."""
        async with self._lock:
            if self.stalled:
                return self._tree.size
            for sequence, chain_hash in await self._read(self._tree.size):
                try:
                    if sequence != self._tree.size + 1:
                        raise ValueError(f"audit event {sequence} follows {self._tree.size}")
                    data = leaf_data(sequence, chain_hash)
                except ValueError as error:
                    self.stalled = str(error)
                    _log.warning(
                        "transparency_log_stalled", size=self._tree.size, detail=str(error)
                    )
                    break
                self._tree.append(data)
                self._leaves += data
            return self._tree.size

    async def checkpoint(self, size: int | None = None) -> SignedCheckpoint:
        """The signed checkpoint of the current tree, or of its first ``size`` leaves (the
        head an export read, which the tree may already have passed)."""
        current = await self.sync()
        if size is None:
            size = current
        if size > current:
            raise ValueError(f"checkpoint of {size} events asked; the log has {current}")
        found = Checkpoint(self.origin, size, self._tree.root(size))
        return SignedCheckpoint(found, self.signer.sign(found))

    async def inclusion(self, sequence: int, tree_size: int) -> tuple[int, int, list[bytes]]:
        """(leaf index, tree size, audit path) of event ``sequence``; ``tree_size`` 0: now."""
        size = await self._size("tree_size", tree_size)
        if not 1 <= sequence <= size:
            raise invalid_field(
                Reason.INVALID_FIELD, "sequence", f"must be between 1 and {size} (the tree size)"
            )
        return sequence - 1, size, self._tree.inclusion_proof(sequence - 1, size)

    async def inclusions(self, sequences: list[int], size: int) -> list[list[bytes]]:
        """The audit paths of events ``sequences`` in the tree of ``size`` leaves (an export's
        head), synced once for the whole batch."""
        current = await self.sync()
        if size > current:
            raise ValueError(f"proofs at {size} events asked; the log has {current}")
        return [self._tree.inclusion_proof(sequence - 1, size) for sequence in sequences]

    def disagreeing(self, hashes: Sequence[tuple[int, str]]) -> int:
        """The first sequence of ``hashes`` ((sequence, stored chain hash), as read) whose
        hash is not the leaf the tree already holds for it, or 0. Read-only (no sync): an
        event the tree has not taken yet is not compared; one the tree took and the file
        changed since is caught here."""
        size = len(self._leaves) // 32
        for sequence, chain_hash in hashes:
            if not 1 <= sequence <= size:
                continue
            try:
                data = leaf_data(sequence, chain_hash)
            except ValueError:
                return sequence
            if self._leaves[(sequence - 1) * 32 : sequence * 32] != data:
                return sequence
        return 0

    async def consistency(self, first: int, second: int) -> tuple[int, list[bytes]]:
        """(second size, proof) that the first ``first`` leaves are a prefix; ``second`` 0: now."""
        size = await self._size("second_size", second)
        if not 0 <= first <= size:
            raise invalid_field(
                Reason.INVALID_FIELD, "first_size", f"must be between 0 and {size} (second_size)"
            )
        if first == 0 or first == size:
            return size, []
        return size, self._tree.consistency_proof(first, size)

    async def _size(self, path: str, asked: int) -> int:
        current = await self.sync()
        if asked < 0 or asked > current:
            raise invalid_field(
                Reason.INVALID_FIELD, path, f"must be between 0 and {current} (0: the current size)"
            )
        return asked or current

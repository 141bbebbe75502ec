"""RFC 6962 Merkle tree over the audit log, with inclusion and consistency proofs.

The audit chain proves order to someone who holds every row; a Merkle tree lets
a client that kept only a signed (size, root) pair check that one event is in
the log, or that a later log still extends the one it saw, from O(log n)
hashes. The definitions follow RFC 6962 section 2.1 (MTH, PATH, PROOF) and the
verifiers follow RFC 9162 sections 2.1.3.2 and 2.1.4.2, so any CT or tlog tool
can check our proofs.

The tree keeps every complete, aligned subtree hash level by level
(``levels[k][i]`` is the hash of leaves ``i*2**k .. (i+1)*2**k - 1``). The RFC's
recursion only ever asks for a complete aligned subtree or for a range that
starts on a boundary of the largest power of two below its length, so any
MTH costs O(log n) lookups and hashes, and appending is O(1) amortized.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    """RFC 6962 leaf hash: SHA-256(0x00 || data)."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 6962 interior node hash: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly smaller than ``n`` (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


class MerkleTree:
    """An append-only RFC 6962 tree that answers for any prefix of itself."""

    def __init__(self) -> None:
        # levels[0] holds leaf hashes; levels[k] complete subtrees of 2**k leaves.
        self._levels: list[list[bytes]] = [[]]

    @property
    def size(self) -> int:
        """Number of leaves appended so far."""
        return len(self._levels[0])

    def append(self, leaf_data: bytes) -> None:
        """Add one leaf; completes at most log n cached subtrees (O(1) amortized)."""
        self._levels[0].append(leaf_hash(leaf_data))
        level = 0
        while len(self._levels[level]) % 2 == 0:
            nodes = self._levels[level]
            parent = node_hash(nodes[-2], nodes[-1])
            if level + 1 == len(self._levels):
                self._levels.append([])
            self._levels[level + 1].append(parent)
            level += 1

    def root(self, size: int | None = None) -> bytes:
        """MTH of the first ``size`` leaves (all of them by default)."""
        if size is None:
            size = self.size
        self._check_size(size)
        if size == 0:
            return EMPTY_ROOT
        return self._mth(0, size)

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        """RFC 6962 PATH(index, D[0:size]): the audit path for leaf ``index``."""
        self._check_size(size)
        if not 0 <= index < size:
            raise ValueError(f"leaf index {index} is outside a tree of size {size}")
        path: list[bytes] = []
        lo, hi, m = 0, size, index
        # Walk from the root down, collecting siblings; PATH lists them leaf-first.
        while hi - lo > 1:
            k = _split(hi - lo)
            if m < k:
                path.append(self._mth(lo + k, hi))
                hi = lo + k
            else:
                path.append(self._mth(lo, lo + k))
                lo, m = lo + k, m - k
        path.reverse()
        return path

    def consistency_proof(self, first: int, second: int) -> list[bytes]:
        """RFC 6962 PROOF(first, D[0:second]); empty when first is 0 or equals second."""
        self._check_size(second)
        if not 0 <= first <= second:
            raise ValueError(f"first size {first} is not within 0..{second}")
        if first == 0 or first == second:
            return []
        proof: list[bytes] = []
        lo, hi, m, whole = 0, second, first, True
        # SUBPROOF(m, D[lo:hi], whole), unrolled; hashes are appended deepest-last
        # by the RFC's concatenation order, so collect then reverse.
        while m != hi - lo:
            k = _split(hi - lo)
            if m <= k:
                proof.append(self._mth(lo + k, hi))
                hi = lo + k
            else:
                proof.append(self._mth(lo, lo + k))
                lo, m, whole = lo + k, m - k, False
        if not whole:
            proof.append(self._mth(lo, hi))
        proof.reverse()
        return proof

    def _check_size(self, size: int) -> None:
        if not 0 <= size <= self.size:
            raise ValueError(f"tree size {size} is outside 0..{self.size}")

    def _mth(self, lo: int, hi: int) -> bytes:
        """MTH(D[lo:hi]) for a non-empty range the RFC recursion can produce."""
        n = hi - lo
        if n & (n - 1) == 0:
            level = n.bit_length() - 1
            return self._levels[level][lo >> level]
        k = _split(n)
        return node_hash(self._mth(lo, lo + k), self._mth(lo + k, hi))


def _valid_hashes(*hashes: bytes) -> bool:
    return all(isinstance(h, bytes) and len(h) == HASH_SIZE for h in hashes)


def verify_inclusion(
    leaf_data: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """RFC 9162 section 2.1.3.2: does ``proof`` place ``leaf_data`` at ``index`` under ``root``?

    Nonsensical indexes or sizes make the proof fail rather than raise: they
    arrive from the party being checked.
    """
    return verify_inclusion_of_hash(leaf_hash(leaf_data), index, size, proof, root)


def verify_inclusion_of_hash(
    hashed_leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """``verify_inclusion`` for a leaf known only by its RFC 6962 leaf hash."""
    if not 0 <= index < size or not _valid_hashes(hashed_leaf, root, *proof):
        return False
    fn, sn = index, size - 1
    r = hashed_leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(
    first: int, second: int, first_root: bytes, second_root: bytes, proof: Sequence[bytes]
) -> bool:
    """RFC 9162 section 2.1.4.2: does (second, second_root) extend (first, first_root)?

    The RFC covers 0 < first < second; the edge cases follow RFC 6962's PROOF:
    first == second needs an empty proof and equal roots, and first == 0 an
    empty proof and the empty-tree root. Nonsensical sizes fail, never raise.
    """
    if not 0 <= first <= second or not _valid_hashes(first_root, second_root, *proof):
        return False
    if first == second:
        return not proof and first_root == second_root
    if first == 0:
        return not proof and first_root == EMPTY_ROOT
    if not proof:
        return False
    path = list(proof)
    if first & (first - 1) == 0:
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == first_root and sr == second_root and sn == 0

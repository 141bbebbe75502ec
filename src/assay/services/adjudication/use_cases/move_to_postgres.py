"""Moving a SQLite corpus to an empty PostgreSQL database, verified before it is committed.

In order: the SQLite file is opened read-only under its process lock and must be at this
code's schema version (``read_only``); the target must hold no Assay data (``fill.occupied``)
and is migrated to the same version; then, in one transaction, every table is copied
(``fill``), the chain is walked on the target as VerifyAuditChain walks it, and the RFC 6962
tree is built over the source's chain hashes and over the target's: the transaction commits
only if the walk is clean, both trees have every event and a consistency proof between them
verifies, so a checkpoint saved from the SQLite server is one the PostgreSQL server extends.
Nothing secret is copied: the ledger key stays a file, named in the report. No row content
is logged or returned, only counts, sizes and roots.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

import asyncpg

from assay.runtime.database_move import MoveRefused, MoveReport, MoveUnverified
from assay.services.adjudication.storage.corpus_tables import TABLES
from assay.services.adjudication.storage.postgres import fill, schema, verify
from assay.services.adjudication.storage.postgres import queries as pg_queries
from assay.services.adjudication.storage.sqlite.read_only import ReadOnlySource, SourceRefused
from assay.services.adjudication.storage.sqlite.single_process import DatabaseInUse
from assay.services.adjudication.use_cases.transparency import default_key_path, leaf_data
from assay.tlog.merkle import MerkleTree, verify_consistency


def tree_of(hashes: Iterable[tuple[int, str]]) -> MerkleTree:
    """The transparency log's tree over ``hashes`` (leaf i: event i + 1's chain hash)."""
    tree = MerkleTree()
    for sequence, chain_hash in hashes:
        if sequence != tree.size + 1:
            raise MoveUnverified(f"audit event {sequence} follows {tree.size}")
        try:
            tree.append(leaf_data(sequence, chain_hash))
        except ValueError as error:  # a hash that is no digest
            raise MoveUnverified(str(error)) from None
    return tree


async def move(path: Path, dsn: str, shown: str) -> MoveReport:
    """Copy the SQLite file ``path`` into the empty PostgreSQL database ``dsn`` (``shown``:
    how messages name it, without its password). A driver's message may quote the URL: the
    caller masks what it shows."""
    try:
        source = ReadOnlySource.open(path)
    except (SourceRefused, DatabaseInUse) as error:
        raise MoveRefused(str(error)) from None
    try:
        try:
            target = await asyncpg.connect(dsn)
        except (asyncpg.PostgresError, OSError, ValueError) as error:
            raise MoveRefused(f"{shown}: {error}") from None
        try:
            counts, source_tree, target_tree = await _copy(source, target, shown)
        except sqlite3.DatabaseError as error:  # the file could not be read to its end
            raise MoveRefused(f"{path}: {error}; nothing was committed") from None
        finally:
            await target.close()
    finally:
        source.close()
    key = default_key_path(path)
    return MoveReport(
        schema_version=schema.SCHEMA_VERSION,
        tables=tuple(counts),
        source_size=source_tree.size,
        source_root=source_tree.root().hex(),
        target_size=target_tree.size,
        target_root=target_tree.root().hex(),
        key_file=str(key),
        key_exists=key.exists(),
    )


async def _copy(
    source: ReadOnlySource, target: pg_queries.Db, shown: str
) -> tuple[list[tuple[str, int]], MerkleTree, MerkleTree]:
    try:
        why = await fill.occupied(target)
        if why:
            raise MoveRefused(f"{shown} is not empty ({why}): the target must be a new database")
        await schema.migrate(target, shown)
        async with target.transaction():
            try:
                counts = await fill.fill(target, [source.table(t) for t in TABLES])
            except ValueError as error:
                raise MoveRefused(f"{shown}: {error}") from None
            verdict = await verify.verify_chain(target)
            if not verdict.ok:
                raise MoveUnverified(
                    f"the copied chain does not verify at event {verdict.first_bad_sequence}: "
                    f"{verdict.detail}; nothing was committed"
                )
            source_tree = tree_of(source.chain_hashes())
            target_tree = tree_of(await pg_queries.chain_hashes(target, 0))
            _check_consistent(source_tree, target_tree)
            return counts, source_tree, target_tree
    except (asyncpg.PostgresError, schema.SchemaTooNew) as error:
        raise MoveRefused(f"{shown}: {error}; nothing was committed") from None


def _check_consistent(source: MerkleTree, target: MerkleTree) -> None:
    """Raise unless the target's tree extends the source's (RFC 6962 consistency)."""
    first, second = source.size, target.size
    if first != second:
        raise MoveUnverified(f"the target has {second} events, the source {first}")
    proof = target.consistency_proof(first, second)
    if not verify_consistency(first, second, source.root(), target.root(), proof):
        raise MoveUnverified("the target's tree is not consistent with the source's")

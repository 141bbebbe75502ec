"""Filling an empty PostgreSQL database with a corpus copied from elsewhere.

``occupied`` says, before anything is created, whether the database already holds Assay
data (a table with rows, or a schema newer than the code). ``fill`` then runs inside the
caller's transaction, after the migrations: it locks every table (a server starting on the
same database waits), checks again that all are empty, copies each table with ``COPY``
(which writes an identity column's given values, so reviews keep their order as
``position``), and moves the ``position`` identity past the highest copied value so the
next review a server stores comes after them. The caller verifies before committing.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.services.adjudication.storage.corpus_tables import TABLES, TableRows
from assay.services.adjudication.storage.postgres import queries, schema


async def occupied(db: queries.Db) -> str:
    """Why ``db`` is not an empty target ("" when it is)."""
    current = await schema.version(db)
    if current > schema.SCHEMA_VERSION:
        return f"schema version {current} is newer than this assay's {schema.SCHEMA_VERSION}"
    for table in TABLES:
        exists = await db.fetchval("SELECT to_regclass($1) IS NOT NULL", table)
        if exists and await db.fetchval(f"SELECT EXISTS (SELECT 1 FROM {table})"):
            return f"table {table} has rows"
    return ""


async def columns(db: queries.Db, table: str) -> set[str]:
    found = await db.fetch(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = $1",
        table,
    )
    return {str(r["column_name"]) for r in found}


async def fill(db: queries.Db, sources: Sequence[TableRows]) -> list[tuple[str, int]]:
    """Copy ``sources`` in order; (table, rows copied) each. ValueError when a table is not
    empty or its columns are not the source's."""
    await db.execute(f"LOCK TABLE {', '.join(TABLES)} IN ACCESS EXCLUSIVE MODE")
    why = await occupied(db)
    if why:
        raise ValueError(why)
    counts: list[tuple[str, int]] = []
    for source in sources:
        if set(source.columns) != await columns(db, source.table):
            raise ValueError(f"table {source.table}: the columns differ between the engines")
        copied = 0
        for batch in source.batches:
            await db.copy_records_to_table(source.table, records=batch, columns=source.columns)
            copied += len(batch)
        counts.append((source.table, copied))
    await db.execute(
        "SELECT setval(pg_get_serial_sequence('reviews', 'position'),"
        " COALESCE(MAX(position), 0) + 1, false) FROM reviews"
    )
    return counts

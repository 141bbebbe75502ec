"""Adjudication storage on PostgreSQL (``--db postgresql://…``), through ``asyncpg``.

The schema and its versioned migrations (``schema``), the read queries
(``queries``) and, bridged, the read primitives ``store_reads`` runs
(``primitives``), the job API (``tx``) whose synchronous methods run their SQL on
the event loop (``greenlet_bridge``), the group-committing writer that serializes the
audit chain across replicas (``writer``), whole-database reads (``verify``),
which asyncpg errors mean the server is unreachable (``faults``), and the
``PostgresStore`` facade, with the same methods as the SQLite store.
"""

from assay.services.adjudication.storage.postgres.schema import SchemaTooNew
from assay.services.adjudication.storage.postgres.store import PostgresStore, is_postgres_url
from assay.services.adjudication.storage.postgres.tx import PostgresWriteTx

__all__ = ["PostgresStore", "PostgresWriteTx", "SchemaTooNew", "is_postgres_url"]

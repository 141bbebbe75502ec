"""All of adjudication's SQL, behind one interface, with two engines.

In this package, what both engines share: the ``Store`` and ``WriteTx``
protocols the service is written against (``interface``), the store's reads
stated once over each engine's ``primitives`` (``store_reads``), the one
group-commit loop both writers run (``group_commit``), row mapping and column
lists (``rows``), SQL predicates both dialects read alike (``predicates``),
what each record kind is checked against in the ledger (``ledger_rules``),
VerifyAuditChain's walk over the rows (``verify_walk``), and which failures
mean a database cannot be reached, reported as UNAVAILABLE (``faults``).

The engines: SQLite, the embedded default (``sqlite``), and PostgreSQL, for
replicas (``postgres``); neither imports the other. ``Store`` and ``WriteTx``
here are SQLite's, the default engine.
"""

from assay.services.adjudication.storage.interface import ExportBatch, StoredResponse
from assay.services.adjudication.storage.sqlite.store import SchemaTooNew, Store
from assay.services.adjudication.storage.sqlite.tx import WriteTx

__all__ = ["ExportBatch", "SchemaTooNew", "Store", "StoredResponse", "WriteTx"]

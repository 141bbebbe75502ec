"""All of adjudication's SQL, behind one interface (``interface``: the ``Store`` and ``WriteTx``
protocols the service is written against) with two engines. Shared by both: what each record
kind is checked against in the ledger (``ledger_rules``) and VerifyAuditChain's walk over the
rows (``verify_walk``). SQLite, the embedded default:
the schema and migrations (``schema``), row mapping (``rows``), read queries (``queries``),
checks of records against the ledger (``ledger_checks``), the job API (``tx``), the
group-committing writer (``writer``) on a connection with a thread of its own
(``sqlite_thread``) and what it remembers between jobs (``memory``), owner-only files
(``files``), one process per file (``single_process``), and the ``Store`` facade.
Both engines report a database they cannot reach as UNAVAILABLE (``faults``).
PostgreSQL, for replicas: ``postgres``."""

from assay.services.adjudication.storage.interface import ExportBatch, StoredResponse
from assay.services.adjudication.storage.store import SchemaTooNew, Store
from assay.services.adjudication.storage.tx import WriteTx

__all__ = ["ExportBatch", "SchemaTooNew", "Store", "StoredResponse", "WriteTx"]

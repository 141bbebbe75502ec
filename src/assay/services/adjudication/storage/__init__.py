"""All of adjudication's SQL: the schema and migrations (``schema``), row mapping (``rows``),
read queries (``queries``), the job API (``tx``), the group-committing writer (``writer``)
with what it remembers between jobs (``memory``), owner-only files (``files``), and the
``Store`` facade."""

from assay.services.adjudication.storage.store import ExportBatch, SchemaTooNew, Store
from assay.services.adjudication.storage.tx import StoredResponse, WriteTx

__all__ = ["ExportBatch", "SchemaTooNew", "Store", "StoredResponse", "WriteTx"]

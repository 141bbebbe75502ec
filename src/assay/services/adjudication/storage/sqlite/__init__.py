"""Adjudication storage on SQLite, the embedded default (``--db <file>``).

The schema and its migrations (``schema``), read queries (``queries``) and the
worklist's (``worklist``), checks of records against the ledger
(``ledger_checks``), the read primitives ``store_reads`` runs (``primitives``),
the job API (``tx``), the writer (``writer``: how a group-committed batch runs)
on a connection with a thread of its own (``sqlite_thread``) and the rows it
keeps between jobs (``case_cache``), owner-only files (``files``), one process
per file (``single_process``), a locked file told apart from a broken one
(``faults``), and the ``Store`` facade.
"""

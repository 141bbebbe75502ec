"""Adjudication's rules: frozen values (``model``), their canonical bytes (``canonical``), what a
valid request field is (``fields``), who may do what (``reviewers``, ``permissions``), the
case and batch rules (``cases``, ``batches``), what reviewers see (``blinding``), a case's
state (``state``), reviews and resolutions (``reviews``, ``resolution``), the gold label
(``gold``), the ledger's records and chain (``records``, ``ledger``) and agreement
(``agreement``, ``multirater``, ``agreement_report``).

Nothing here imports gRPC, protobuf or a database driver; the import-layer contract in the
suite holds it so.
"""

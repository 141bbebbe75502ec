"""What each adjudication RPC does, in order, on domain values and the storage protocols.

One package rather than one module because the three together are over 700 lines:
``operations`` (the mutations), ``retries`` (a request id's first answer, replayed),
``lookups`` (the reads) and ``transparency`` (checkpoints and proofs over the ledger).
"""

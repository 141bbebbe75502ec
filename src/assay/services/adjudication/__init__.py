"""The Adjudication service: blinded review of disputed cases into a tamper-evident gold corpus.

The folders are the layers, and imports point one way (adapters → use cases → domain):

- ``domain``: the rules, as plain values in and plain values out; no gRPC, protobuf or
  database driver, so every rule is testable on its own.
- ``use_cases``: what each RPC does, in order: ``operations`` (mutations, each one
  group-committed job), ``retries`` (request-id idempotency), ``lookups`` (reads) and
  ``transparency`` (the signed log over the ledger).
- ``grpc``: the gRPC adapter: ``values`` and ``convert`` translate protobuf to domain values
  and back, ``servicer`` calls a use case in between.
- ``storage``: the storage adapter, all SQL, behind the ``interface`` protocols.

``service`` wires them together into the runtime's spec.
"""

"""The Adjudication service: blinded review of disputed cases into a tamper-evident gold corpus.

Pure rules: ``model``, ``canonical``, ``fields``, ``reviewers``, ``cases``, ``blinding``,
``state``, ``reviews``, ``resolution``, ``gold``, ``ledger``, ``agreement``, ``paging``. All SQL:
the ``storage`` package. Use cases: ``operations`` (mutations, each one group-committed job),
``retries`` (request-id idempotency) and ``lookups`` (reads). Protobuf: ``values``, ``convert``
and ``servicer``. ``service`` builds the runtime spec.
"""

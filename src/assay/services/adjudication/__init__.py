"""The Adjudication service: blinded review of disputed cases into a tamper-evident gold corpus.

Pure rules live in ``model``, ``fields``, ``reviewers``, ``cases``, ``blinding``, ``state``,
``reviews``, ``resolution``, ``gold``, ``ledger``, ``agreement`` and ``paging``; all SQL is in
``storage``; ``commands`` runs each mutation as one transaction; ``convert`` and ``servicer``
speak protobuf; ``service`` builds the runtime spec.
"""

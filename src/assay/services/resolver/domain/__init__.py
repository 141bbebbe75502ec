"""The resolver's rules: claims in, resolutions out, as plain values.

Fusion, relations, staleness, policy and the request checks that need no message:
nothing here knows protobuf, gRPC or the runtime, so every rule is tested with plain
values (``tests/unit/resolver``). The import contracts in ``pyproject.toml``
(``[tool.importlinter]``) keep it so.
"""

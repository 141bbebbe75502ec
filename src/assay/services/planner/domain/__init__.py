"""The planner's rules: gaps, probes, outcomes and their value, as plain values.

Nothing here knows protobuf, gRPC or the resolver's address: a plan is computed from
a ``model.PlanInput`` and the resolver's answers as ``model.Resolution`` values, so
every rule is tested with plain values (``tests/unit/planner``). The import contracts
in ``pyproject.toml`` (``[tool.importlinter]``) keep it so.
"""

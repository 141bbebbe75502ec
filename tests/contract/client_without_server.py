"""Uses the client library in an interpreter where only its base dependencies can be imported.

Run by ``test_client_dependencies.py`` as a script, never imported by the suite. It reads
``{"blocked": [top-level module names], "target": "host:port"}`` on stdin, puts a finder
first on ``sys.meta_path`` that refuses every blocked name (as if those distributions were not
installed), then imports every module of ``assay.client`` and calls a real resolver with the
sync and the async clients: one good call and one bad one, whose rich error details (reason
and field paths) must decode here, without the server's runtime. It prints a JSON report:
the modules imported, the blocked names something tried, and what the calls returned.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.abc
import importlib.machinery
import json
import pkgutil
import sys
import types
from collections.abc import Sequence
from typing import Any

UNKNOWN_SOURCE_CLAIM = {
    "subject": "api:x",
    "predicate": "idempotency.mode",
    "value": "none",
    "source": "oracle",
    "confidence": 0.9,
}
GOOD_CLAIM = {**UNKNOWN_SOURCE_CLAIM, "source": "api_spec"}


class Blocker(importlib.abc.MetaPathFinder):
    """Refuses the blocked top-level packages and remembers who asked for which."""

    def __init__(self, blocked: Sequence[str]) -> None:
        self.blocked = frozenset(blocked)
        self.refused: set[str] = set()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.partition(".")[0]
        if top in self.blocked:
            self.refused.add(top)
            raise ModuleNotFoundError(f"{fullname} is blocked: not a client dependency", name=top)
        return None


def call_error(error: Any) -> dict[str, Any]:
    return {
        "type": type(error).__name__,
        "reason": str(error.reason),
        "fields": list(error.field_paths()),
    }


def sync_calls(target: str) -> dict[str, Any]:
    from assay.client import AssayCallError, ResolverClient

    with ResolverClient(target, timeout=10.0) as resolver:
        good = resolver.resolve([GOOD_CLAIM], "api:x", "idempotency.mode")
        try:
            resolver.resolve([UNKNOWN_SOURCE_CLAIM], "api:x", "idempotency.mode")
        except AssayCallError as error:
            bad = call_error(error)
        else:
            bad = {}
    return {"status": good.status, "error": bad}


async def async_calls(target: str) -> dict[str, Any]:
    from assay.client import AssayCallError, AsyncResolverClient

    async with AsyncResolverClient(target, timeout=10.0) as resolver:
        good = await resolver.resolve([GOOD_CLAIM], "api:x", "idempotency.mode")
        try:
            await resolver.resolve([UNKNOWN_SOURCE_CLAIM], "api:x", "idempotency.mode")
        except AssayCallError as error:
            bad = call_error(error)
        else:
            bad = {}
    return {"status": good.status, "error": bad}


def columnar_error() -> str:
    """What ``resolve_table``'s encoder says when pyarrow is not installed."""
    from assay.client.columns import columns_request

    try:
        columns_request(claims=None)
    except ImportError as error:
        return str(error)
    return ""


def top_level_files(imported: set[str]) -> dict[str, str | None]:
    """The top-level packages of the modules imported since the start, and their files."""
    tops = {name.partition(".")[0] for name in imported}
    return {top: getattr(sys.modules.get(top), "__file__", None) for top in sorted(tops)}


def main() -> None:
    config = json.load(sys.stdin)
    blocker = Blocker(config["blocked"])
    sys.meta_path.insert(0, blocker)
    at_start = set(sys.modules)

    import assay.client

    for info in pkgutil.walk_packages(assay.client.__path__, "assay.client."):
        importlib.import_module(info.name)
    from assay.client import builders

    report = {
        "value_round_trip": builders.from_value(builders.to_value({"a": [1, "b", None]})),
        "sync": sync_calls(config["target"]),
        "async": asyncio.run(async_calls(config["target"])),
        "columnar_error": columnar_error(),
        "modules": sorted(sys.modules),
        "top_level_files": top_level_files(set(sys.modules) - at_start),
        "refused": sorted(blocker.refused),
    }
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()

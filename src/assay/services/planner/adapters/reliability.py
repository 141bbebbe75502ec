"""The resolver's reliability table as the planner uses it: fetched once, kept a while.

The likelihood model (``outcomes``) needs each probe's accuracy, which is the
reliability of the source kind it yields in the resolver's own table (replaceable at
the resolver's start, so the planner asks rather than assumes). The table changes only
when a resolver restarts with another file, so one ``GetResolverPolicy`` answer serves
plans for ``TABLE_TTL_SECONDS``; the first plan fetches it alongside its
``ResolveSemantic`` call, so the fetch adds no round trip of its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from assay.services.planner.adapters.resolver_client import Deadline, ResolverClient

TABLE_TTL_SECONDS = 30.0


class ReliabilityTable:
    """The cached table of one resolver channel."""

    def __init__(self, resolver: ResolverClient, ttl_seconds: float = TABLE_TTL_SECONDS) -> None:
        self._resolver = resolver
        self._ttl = ttl_seconds
        self._table: Mapping[str, float] | None = None
        self._fetched_at = 0.0
        self._pending: asyncio.Task[Mapping[str, float]] | None = None

    def cached(self) -> Mapping[str, float] | None:
        """The table if it is fresh enough to use without asking."""
        if self._table is not None and time.monotonic() - self._fetched_at < self._ttl:
            return self._table
        return None

    async def get(
        self, deadline: Deadline, metadata: Sequence[tuple[str, str]] = ()
    ) -> Mapping[str, float]:
        """The table, fetched when stale; concurrent plans share one fetch."""
        table = self.cached()
        if table is not None:
            return table
        if self._pending is None or self._pending.done():
            self._pending = asyncio.ensure_future(self._fetch(deadline, metadata))
        return await asyncio.shield(self._pending)

    async def _fetch(
        self, deadline: Deadline, metadata: Sequence[tuple[str, str]]
    ) -> Mapping[str, float]:
        reply = await self._resolver.resolver_policy(deadline, metadata)
        table = MappingProxyType({row.source: row.reliability for row in reply.reliability_table})
        self._table, self._fetched_at = table, time.monotonic()
        return table

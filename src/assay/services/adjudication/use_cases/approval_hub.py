"""Wakes the watchers of an approval when it changes: the server side of WatchApproval.

A watcher registers for its approval (``watching``) before it first reads it; while anyone
watches, each ``changed`` bumps the approval's version and wakes its waiters. A watcher
remembers the version it read the approval at and ``wait``s for a later one (or its
deadline), so a change that lands between its read and its wait is never missed. Changes
come from this process's own commits and, on PostgreSQL, from the other replicas' (the
store's notifications call ``changed`` too); a change to an approval no one here watches
keeps nothing, so the hub holds only what open watches need. Nothing polls: a watcher
sleeps until it is woken or its deadline.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager


class ApprovalHub:
    """Per-approval versions and the watchers waiting on them."""

    def __init__(self) -> None:
        self._watchers: Counter[str] = Counter()
        self._versions: dict[str, int] = {}
        self._waiting: dict[str, asyncio.Event] = {}

    @contextmanager
    def watching(self, approval_id: str) -> Iterator[None]:
        """Keep the approval's version for the block: a watch's whole life."""
        self._watchers[approval_id] += 1
        try:
            yield
        finally:
            self._watchers[approval_id] -= 1
            if not self._watchers[approval_id]:
                del self._watchers[approval_id]
                self._versions.pop(approval_id, None)
                self._waiting.pop(approval_id, None)

    def version(self, approval_id: str) -> int:
        return self._versions.get(approval_id, 0)

    def changed(self, approval_id: str) -> None:
        """Bump the approval's version and wake everyone waiting on it (if anyone watches)."""
        if approval_id not in self._watchers:
            return
        self._versions[approval_id] = self.version(approval_id) + 1
        event = self._waiting.pop(approval_id, None)
        if event is not None:
            event.set()

    async def wait(self, approval_id: str, seen: int, seconds: float | None) -> bool:
        """True once the version passes ``seen``; False when ``seconds`` pass first. Only
        inside ``watching(approval_id)``."""
        if self.version(approval_id) != seen:
            return True
        event = self._waiting.get(approval_id)
        if event is None:
            event = self._waiting[approval_id] = asyncio.Event()
        try:
            async with asyncio.timeout(seconds):
                await event.wait()
        except TimeoutError:
            return self.version(approval_id) != seen
        return True

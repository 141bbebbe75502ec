"""Wakes the watchers of an approval when it changes: the server side of WatchApproval.

Each approval id has a version that ``changed`` bumps; a watcher remembers the version it
read the approval at and ``wait``s for a later one (or its deadline), so a change that
lands between its read and its wait is never missed. Changes come from this process's own
commits and, on PostgreSQL, from the other replicas' (the store's notifications call
``changed`` too). Nothing polls: a watcher sleeps until it is woken or its deadline.
"""

from __future__ import annotations

import asyncio


class ApprovalHub:
    """Per-approval versions and the watchers waiting on them."""

    def __init__(self) -> None:
        self._versions: dict[str, int] = {}
        self._waiting: dict[str, asyncio.Event] = {}

    def version(self, approval_id: str) -> int:
        return self._versions.get(approval_id, 0)

    def changed(self, approval_id: str) -> None:
        """Bump the approval's version and wake everyone waiting on it."""
        self._versions[approval_id] = self.version(approval_id) + 1
        event = self._waiting.pop(approval_id, None)
        if event is not None:
            event.set()

    async def wait(self, approval_id: str, seen: int, seconds: float | None) -> bool:
        """True once the version passes ``seen``; False when ``seconds`` pass first."""
        if self.version(approval_id) != seen:
            return True
        event = self._waiting.setdefault(approval_id, asyncio.Event())
        try:
            async with asyncio.timeout(seconds):
                await event.wait()
        except TimeoutError:
            return self.version(approval_id) != seen
        return True

    def forget(self, approval_id: str) -> None:
        """Drop a final approval's version (nothing more can change it)."""
        self._versions.pop(approval_id, None)

"""Records the expiry of approvals no one is watching, shortly after their deadline.

An approval's state turns EXPIRED by the clock, so every read is right at once; the
APPROVAL_EXPIRED event is what the ledger keeps of it. A watcher records it itself at the
deadline (``Approvals.watch``); for the rest this task wakes at the next known deadline,
or after ``longest`` seconds to see approvals requested since (on any replica), and
records what is due. Recording is idempotent across replicas: the job re-reads the
approval's steps, locked, and writes the step only if none says so yet.
"""

from __future__ import annotations

import asyncio
import contextlib

from assay.errors import AssayError
from assay.runtime.logging import get_logger
from assay.services.adjudication.use_cases.approvals import Approvals

_log = get_logger("assay.adjudication.approvals")


class ExpiryWatch:
    """A background task over one ``Approvals``; ``close`` stops it."""

    def __init__(self, approvals: Approvals, longest: float = 30.0) -> None:
        self.approvals = approvals
        self.longest = longest
        self._task = asyncio.get_running_loop().create_task(self._run(), name="approval expiry")

    async def _run(self) -> None:
        while True:
            seconds = self.longest
            try:
                upcoming = await self.approvals.expire_due()
            except AssayError as error:  # the database is away: try again later
                _log.warning("approval_expiry_failed", reason=error.reason.value)
            else:
                if upcoming is not None:
                    left = (upcoming - self.approvals.clock()).total_seconds()
                    seconds = min(self.longest, max(0.05, left))
            await asyncio.sleep(seconds)  # until the next deadline: a timer, not a poll loop

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

"""Tells a configured webhook of every approval transition, so people hear of it.

Each change that commits (a request, a decision, a grant, a denial, a revocation, the
use, an expiry) is POSTed as a small JSON document to ``webhook_url``: ids, states and the
actor, never the untrusted reason text (the receiver fetches the approval with its own
credential to show it). Delivery runs on a background task, off the request's path, and
is retried with exponential backoff up to ``attempts`` times; a bounded queue drops the
oldest notice (and logs it) rather than grow without end. It is a notice, not the record:
the ledger is the record, and a missed notice loses nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from assay.runtime.logging import get_logger
from assay.services.adjudication.domain.times import rfc3339

if TYPE_CHECKING:
    from assay.services.adjudication.domain.approvals import ApprovalView

_log = get_logger("assay.adjudication.approvals")
QUEUE_LIMIT = 1_000
TIMEOUT_SECONDS = 5.0


def notice(view: ApprovalView) -> dict[str, Any]:
    """The document sent for ``view``'s latest change."""
    approval = view.approval
    last = view.steps[-1] if view.steps else None
    actor = approval.requester if last is None else last.actor
    return {
        "approval_id": approval.approval_id,
        "tenant": approval.tenant,
        "subject": approval.subject,
        "predicate": approval.predicate,
        "probe": approval.candidate.probe,
        "candidate_digest": approval.candidate.candidate_digest,
        "change": "REQUESTED" if last is None else last.kind.value,
        "state": view.standing.state.value,
        "actor": None if actor is None else {"issuer": actor.issuer, "subject": actor.subject},
        "time": rfc3339(approval.request_time if last is None else last.occur_time),
    }


def _post(url: str, body: bytes) -> int:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:
        return int(answer.status)


class Notifier:
    """A background sender of approval notices to one webhook URL."""

    def __init__(self, url: str, attempts: int = 5, first_delay: float = 0.5) -> None:
        self.url = url
        self.attempts = attempts
        self.first_delay = first_delay
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE_LIMIT)
        self._task: asyncio.Task[None] | None = None

    def send(self, view: ApprovalView) -> None:
        """Queue the notice of ``view``'s latest change (dropping the oldest when full)."""
        if self._queue.full():
            dropped = self._queue.get_nowait()
            _log.warning("approval_notice_dropped", approval_id=dropped["approval_id"])
        self._queue.put_nowait(notice(view))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="approval notices"
            )

    async def _run(self) -> None:
        while not self._queue.empty():
            await self._deliver(self._queue.get_nowait())

    async def _deliver(self, document: dict[str, Any]) -> None:
        body = json.dumps(document, separators=(",", ":")).encode("utf-8")
        delay = self.first_delay
        for attempt in range(1, self.attempts + 1):
            try:
                status = await asyncio.to_thread(_post, self.url, body)
                if status < 300:
                    return
                problem = f"HTTP {status}"
            except urllib.error.HTTPError as error:
                problem = f"HTTP {error.code}"
            except (urllib.error.URLError, OSError, TimeoutError) as error:
                problem = type(error).__name__
            if attempt < self.attempts:
                await asyncio.sleep(delay)  # backoff between delivery attempts, not a test wait
                delay *= 2
        _log.warning(
            "approval_notice_undelivered",
            approval_id=document["approval_id"],
            change=document["change"],
            attempts=self.attempts,
            problem=problem,
        )

    async def close(self) -> None:
        """Stop sending; what is still queued is dropped (the ledger has it)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

"""When a use case's work should stop: its caller cancelled, or its deadline passed.

The use cases call ``stop.check()`` between chunks of the claims they read, groups,
hypotheses and proposals; what sets a stop is the adapter's business (``adapters.offload``
cancels it when grpc cancels the handler's task). Work that runs on the loop gets
``NEVER``, which nothing can set.
"""

from __future__ import annotations

import time


class Abandoned(Exception):
    """The caller is gone (cancelled, or past its deadline): the work stops here."""


class Stop:
    """Whether a piece of work should stop: its caller cancelled, or its deadline passed."""

    __slots__ = ("deadline", "finished", "reason", "since")

    def __init__(self, remaining: float | None = None) -> None:
        """``remaining``: seconds until the caller's deadline (None: it set none)."""
        self.deadline = None if remaining is None else time.monotonic() + remaining
        self.reason = ""
        self.since = 0.0  # when the stop took effect (monotonic)
        self.finished = 0.0  # when the work returned or unwound (monotonic)

    def cancel(self) -> None:
        """The caller cancelled, or grpc did at its deadline: the work stops at its next check."""
        if self.reason:
            return
        now = time.monotonic()
        if self.deadline is not None and now >= self.deadline:
            self.since, self.reason = self.deadline, "deadline"
        else:
            self.since, self.reason = now, "cancelled"

    def check(self) -> None:
        """Raise ``Abandoned`` if the work should stop; cheap enough to call per group."""
        if self.reason:
            raise Abandoned(self.reason)
        deadline = self.deadline
        if deadline is not None and time.monotonic() > deadline:
            self.since = deadline
            self.reason = "deadline"
            raise Abandoned(self.reason)


NEVER = Stop()
"""The stop of work that runs on the loop: nothing can cancel it mid-way, so it never stops."""

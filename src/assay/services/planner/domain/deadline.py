"""The caller's deadline, carried to every call a plan makes on its behalf.

Python gRPC does not propagate deadlines: the planner reads the time its caller has
left once, as an absolute point on the monotonic clock, and each resolver call gets
what remains of it (``adapters.resolver_client``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

# Time kept back from the caller's deadline to translate and send the answer.
DEADLINE_MARGIN_SECONDS = 0.05
# Per call, when the caller set no deadline at all.
DEFAULT_CALL_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Deadline:
    """An absolute deadline on the monotonic clock; ``None`` means the caller set none."""

    expires_at: float | None

    @classmethod
    def after(cls, remaining: float | None) -> Deadline:
        return cls(None if remaining is None else time.monotonic() + remaining)

    def remaining(self) -> float | None:
        return None if self.expires_at is None else self.expires_at - time.monotonic()

    def call_timeout(self) -> float:
        """The timeout for the next downstream call (may be <= 0: no time left)."""
        left = self.remaining()
        if left is None:
            return DEFAULT_CALL_TIMEOUT_SECONDS
        return left - DEADLINE_MARGIN_SECONDS

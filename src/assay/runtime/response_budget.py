"""How large a response may be: a bounded multiple of its request, within the message limit.

A service whose response grows faster than its request lets one caller make it build far
more than it was sent (the resolver once built responses it could never send). Every
response an RPC builds from its request is therefore held to at most ``RESPONSE_RATIO``
times the request's serialized size (responses up to ``RESPONSE_FLOOR_BYTES`` always are: a
plan or a policy has a fixed part), and to the server's maximum message size, which gRPC
would otherwise refuse to send with a bare RESOURCE_EXHAUSTED.

Past it, ``ResponseBudget`` raises INVALID_ARGUMENT with ERROR_REASON_RESPONSE_TOO_LARGE,
naming the request field that drives the size. A servicer counts what it adds as it goes
(``element``), so a response over budget is refused as soon as it passes the budget, not
after all of it is built; the request's exact size is computed only when a cheap lower
bound no longer allows the response.
"""

from __future__ import annotations

from collections.abc import Callable

from assay.errors import FieldViolation, InvalidArgument, Reason
from assay.protowire import element_size

RESPONSE_RATIO = 100
RESPONSE_FLOOR_BYTES = 64 * 1024
# The fewest bytes a valid ``assay.v1.Claim`` takes in a request: subject, predicate and
# source of one character and a boolean value, with their tags (a lower bound of a
# request's size is this times its claims, plus the list elements' keys and lengths).
MIN_CLAIM_WIRE_BYTES = 13


def response_limit(request_bytes: int, max_message_bytes: int) -> int:
    """The largest response a request of ``request_bytes`` may get (module docstring)."""
    return min(max_message_bytes, max(RESPONSE_FLOOR_BYTES, RESPONSE_RATIO * request_bytes))


class ResponseBudget:
    """The response size one request may reach, and the response counted so far."""

    def __init__(
        self,
        max_message_bytes: int,
        request_bytes_at_least: int,
        request_bytes: Callable[[], int],
        field: str,
        advice: str,
    ) -> None:
        """``request_bytes`` computes the request's exact size: called at most once, and
        only if a response outgrows what ``request_bytes_at_least`` allows. ``field`` is
        the request field the error names; ``advice`` what the caller can do about it."""
        self.max_message_bytes = max_message_bytes
        self._request_bytes = request_bytes
        self._exact = False
        self.limit = response_limit(request_bytes_at_least, max_message_bytes)
        self.field = field
        self.advice = advice
        self.used = 0

    def element(self, tag: bytes, size: int) -> None:
        """Count one message field keyed ``tag`` (``protowire.tag_of``), ``size`` bytes
        serialized (plus its key and its length); raise RESPONSE_TOO_LARGE past the budget."""
        self.add(element_size(tag, size))

    def add(self, size: int) -> None:
        """Count ``size`` more bytes of the response; raise RESPONSE_TOO_LARGE past the budget."""
        self.used += size
        if self.used <= self.limit:
            return
        if not self._exact:
            self._exact = True
            self.limit = response_limit(self._request_bytes(), self.max_message_bytes)
            if self.used <= self.limit:
                return
        why = (
            f"the response would exceed {self.limit:,} bytes (at most {RESPONSE_RATIO}x "
            f"the request, and at most the {self.max_message_bytes:,}-byte message "
            f"limit): {self.advice}"
        )
        raise InvalidArgument(
            Reason.RESPONSE_TOO_LARGE,
            f"{self.field}: {why}",
            [FieldViolation(self.field, why)],
            {"limit_bytes": str(self.limit)},
        )

"""Times as adjudication stores and digests them: microseconds since the epoch, RFC 3339 UTC.

Every stored time is an integer of microseconds (``to_micros``, ``from_micros``: the
resolution ``datetime`` keeps), and every time inside a digested record is spelled once
(``rfc3339``: UTC, microsecond precision, ``Z``), so a digest never depends on how a time
was written. ``now`` reads the clock at that resolution.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@functools.lru_cache(maxsize=1024)  # a job stamps its rows with one instant, spelled twice
def rfc3339(moment: datetime) -> str:
    """UTC, microsecond precision, ``Z`` suffix: one spelling per instant."""
    utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)
    if utc.year < 1000:  # strftime's %Y does not pad years below 1000 (isoformat would)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    # isoformat is several times faster than strftime and spells the same digits.
    return utc.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def to_micros(moment: datetime) -> int:
    """Microseconds since the epoch (how times are stored)."""
    delta = (moment if moment.tzinfo is UTC else moment.astimezone(UTC)) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    seconds, rest = divmod(micros, 1_000_000)
    return datetime.fromtimestamp(seconds, tz=UTC).replace(microsecond=rest)


def now() -> datetime:
    """The current time, at what storage keeps: microseconds (``datetime``'s own resolution)."""
    return datetime.now(tz=UTC)


def from_rfc3339(text: str) -> datetime:
    """The moment ``rfc3339`` spelled (ValueError for anything else)."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return moment.astimezone(UTC)

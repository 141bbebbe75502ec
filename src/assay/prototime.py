"""The validity rules of ``google.protobuf.Timestamp`` and ``Duration``, for every service.

The wire accepts any int64 ``seconds`` and int32 ``nanos``; the well-known types'
own definitions narrow them. A Timestamp lies in the RFC 3339 range
0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999999999Z with ``nanos`` in
[0, 999,999,999] (a negative ``nanos`` is not "a bit earlier", it is malformed); a
Duration is within ±10,000 years, with ``|nanos|`` below one second and of the same
sign as ``seconds``. Anything else is bad input, reported with the field's path like
any other. The checks take the two integers, so domain code can call them without
protobuf, and return a description (never the whole value: both numbers are bounded
integers) or None.
"""

from __future__ import annotations

# 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z as seconds since the Unix epoch.
MIN_TIMESTAMP_SECONDS = -62_135_596_800
MAX_TIMESTAMP_SECONDS = 253_402_300_799
# 10,000 years of 365.25 days, as google/protobuf/duration.proto states.
MAX_DURATION_SECONDS = 315_576_000_000
MAX_NANOS = 999_999_999


def valid_timestamp(seconds: int, nanos: int) -> bool:
    """True when (seconds, nanos) is a Timestamp the well-known type allows."""
    return 0 <= nanos <= MAX_NANOS and MIN_TIMESTAMP_SECONDS <= seconds <= MAX_TIMESTAMP_SECONDS


def timestamp_problem(seconds: int, nanos: int) -> str | None:
    """Why (seconds, nanos) is not a valid Timestamp, or None when it is."""
    if not 0 <= nanos <= MAX_NANOS:
        return f"not a valid timestamp: nanos {nanos} is outside [0, {MAX_NANOS}]"
    if not MIN_TIMESTAMP_SECONDS <= seconds <= MAX_TIMESTAMP_SECONDS:
        return (
            f"not a valid timestamp: seconds {seconds} is outside 0001-01-01T00:00:00Z.."
            "9999-12-31T23:59:59Z"
        )
    return None


def duration_problem(seconds: int, nanos: int) -> str | None:
    """Why (seconds, nanos) is not a valid Duration, or None when it is."""
    if not -MAX_NANOS <= nanos <= MAX_NANOS:
        return f"not a valid duration: nanos {nanos} is outside [-{MAX_NANOS}, {MAX_NANOS}]"
    if not -MAX_DURATION_SECONDS <= seconds <= MAX_DURATION_SECONDS:
        return f"not a valid duration: seconds {seconds} is beyond ±10,000 years"
    if (seconds > 0 and nanos < 0) or (seconds < 0 and nanos > 0):
        return f"not a valid duration: seconds {seconds} and nanos {nanos} differ in sign"
    return None

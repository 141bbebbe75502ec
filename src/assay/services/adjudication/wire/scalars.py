"""Well-known-type and enum conversions shared by ``convert``: times and enum names.

Enums map by name — the contract's value name minus its prefix equals the domain
enum's value — so adding a member on one side only fails loudly instead of
silently mapping to UNSPECIFIED.
"""

from __future__ import annotations

import functools
import hashlib
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from google.protobuf import timestamp_pb2
from google.protobuf.message import Message

from assay.prototime import timestamp_problem
from assay.services.adjudication.domain.times import from_micros, to_micros

E = TypeVar("E", bound=Enum)


# The conversions below run for every request and response (SubmitReview: three of them) and
# each took a descriptor lookup or a name built and parsed; the answers never change, so they
# are cached. Bounded: a request may carry any number for an open enum.
@functools.lru_cache(maxsize=1024)
def from_proto_enum(domain: type[E], proto_name: str, prefix: str) -> E | None:
    """The domain member for a proto enum value name, or None for UNSPECIFIED/unknown."""
    if not proto_name.startswith(prefix):
        return None
    try:
        return domain(proto_name[len(prefix) :])
    except ValueError:
        return None


@functools.lru_cache(maxsize=1024)
def enum_name(enum_type: Any, number: int) -> str:
    found = enum_type.DESCRIPTOR.values_by_number.get(number)
    return found.name if found is not None else ""


@functools.lru_cache(maxsize=1024)
def to_proto_enum(enum_type: Any, prefix: str, member: Enum) -> Any:
    # Any: each mypy-protobuf enum has its own ValueType; the name lookup is checked at runtime.
    return enum_type.Value(prefix + member.value)


def timestamp(moment: datetime) -> timestamp_pb2.Timestamp:
    micros = to_micros(moment)
    seconds, rest = divmod(micros, 1_000_000)
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=rest * 1000)


def from_timestamp(stamp: timestamp_pb2.Timestamp) -> datetime:
    """The instant of a request's Timestamp; ValueError (saying why) when it is malformed.

    A negative ``nanos`` would otherwise just shift the instant back, and seconds beyond
    year 9999 would fail deep inside ``datetime``: both are bad input, caught here.
    """
    problem = timestamp_problem(stamp.seconds, stamp.nanos)
    if problem is not None:
        raise ValueError(problem)
    return from_micros(stamp.seconds * 1_000_000 + stamp.nanos // 1000)


def request_digest(request: Message) -> str:
    """What a retry must repeat exactly: the deterministic bytes of the whole request."""
    return hashlib.sha256(request.SerializeToString(deterministic=True)).hexdigest()

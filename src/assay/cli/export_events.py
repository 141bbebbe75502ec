"""One ledger event of an exported record proven against the export's signed checkpoint.

Trust flows down from the signed root, and each step uses only what the step before it
proved: the event's ``hash`` is proven by its RFC 6962 inclusion proof at ``leaf_index``
(``merkle.verify_inclusion`` up to the checkpoint's root), then the event's fields by
hashing to that proven hash (``ledger.event_hash``, the server's own rule). Only then is its
payload evidence against the record's fields.

An edit fails one of these steps whatever it touched. Which field the failure names is
worked out the same way, assuming one edit: a ``hash`` that is not in the tree while the
hash of the event's fields is (the hash was edited), a ``leaf_index`` that is not the
event's, a path that proves nothing; and for an event whose fields no longer hash to its
proven hash, the payload key that disagrees with the record (the payload was edited), else
the fields nothing else holds (``occurTime``, ``previousHash``, ``actor``, payload keys the
record cannot restate), listed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import Any

from assay.services.adjudication.domain import ledger
from assay.services.adjudication.domain.digests import DIGEST_PREFIX
from assay.services.adjudication.domain.model import Actor, AuditEventType
from assay.tlog.checkpoint import Checkpoint
from assay.tlog.merkle import verify_inclusion
from assay.v1 import adjudication_service_pb2 as pb


class BadRecord(ValueError):
    """A record that fails a check: ``field`` (its path in the file, as JSON names it) and
    ``why``."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field = field
        self.why = why


def enum_name(value: int, enum: Any, prefix: str) -> str:
    return str(enum.Name(value)).removeprefix(prefix)


def recomputed_hash(event: pb.AuditEvent) -> str:
    """The chain hash of ``event`` recomputed from its fields (ValueError when unreadable)."""
    actor = Actor(event.actor.issuer, event.actor.subject) if event.HasField("actor") else None
    return ledger.event_hash(
        event.sequence,
        AuditEventType(enum_name(event.event_type, pb.AuditEventType, "AUDIT_EVENT_TYPE_")),
        event.occur_time.ToDatetime(tzinfo=UTC),
        dict(event.payload),
        event.previous_hash,
        actor,
    )


def _in_tree(chain_hash: str, index: int, path: Sequence[bytes], signed: Checkpoint) -> bool:
    if not chain_hash.startswith(DIGEST_PREFIX) or not 0 <= index < signed.size:
        return False
    try:
        leaf = bytes.fromhex(chain_hash.removeprefix(DIGEST_PREFIX))
    except ValueError:
        return False
    # A malformed proof (wrong hash sizes or count) simply fails: the verifier never raises.
    return verify_inclusion(leaf, index, signed.size, list(path), signed.root)


def proven_payload(
    where: str,
    event: pb.AuditEvent,
    leaf_index: int,
    path: Sequence[bytes],
    signed: Checkpoint,
    event_type: pb.AuditEventType.ValueType,
    claims: Mapping[str, str],
) -> dict[str, str]:
    """The payload of ``event`` (found at ``where`` in the record, e.g. ``inclusion``) once
    the event is proven to be leaf ``leaf_index`` of the tree ``signed`` commits to, with
    exactly these fields; ``BadRecord`` naming the field otherwise. ``claims``: the payload
    the record's own fields say the event holds, used only to name an edited payload key."""
    try:
        recomputed = recomputed_hash(event)
    except ValueError:
        recomputed = ""
    if not _in_tree(event.hash, leaf_index, path, signed):
        if recomputed and _in_tree(recomputed, leaf_index, path, signed):
            raise BadRecord(
                f"{where}.event.hash",
                "is not the hash of the event's fields, which the signed tree holds",
            )
        if event.sequence - 1 != leaf_index and _in_tree(
            event.hash, event.sequence - 1, path, signed
        ):
            raise BadRecord(
                f"{where}.leafIndex",
                f"is {leaf_index}, but event {event.sequence} is leaf {event.sequence - 1}",
            )
        raise BadRecord(
            f"{where}.inclusionPath",
            f"does not prove event {event.sequence} to be in the signed tree of "
            f"{signed.size} event(s)",
        )
    if event.sequence - 1 != leaf_index:
        raise BadRecord(
            f"{where}.event.sequence",
            f"is {event.sequence}, but the proven leaf {leaf_index} is event {leaf_index + 1}",
        )
    if event.event_type != event_type:
        raise BadRecord(
            f"{where}.event.eventType",
            f"is {pb.AuditEventType.Name(event.event_type)}, not "
            f"{pb.AuditEventType.Name(event_type)}",
        )
    payload = dict(event.payload)
    if recomputed != event.hash:
        edited = sorted(key for key, value in claims.items() if payload.get(key, value) != value)
        if edited:
            raise BadRecord(
                f"{where}.event.payload.{edited[0]}",
                f"is {payload.get(edited[0])!r}, not what the record says, and the event's "
                "fields no longer hash to its proven hash: it was altered",
            )
        others = ["occurTime", "previousHash", "actor"]
        others += [f"payload.{key}" for key in sorted(payload) if key not in claims]
        raise BadRecord(
            f"{where}.event",
            f"its fields do not hash to its proven hash: one of {', '.join(others)} was altered",
        )
    return payload

"""The audit ledger: an append-only hash chain, and the walk that verifies it.

Each event's hash covers its sequence, type, time, payload, the previous event's hash and,
when it has one, its actor (the authenticated caller), so editing, removing or reordering any
event breaks every hash after it. The actor is hashed only when set, so an event written
without one (dev mode, or before actors were recorded) hashes as it always did and old
ledgers verify. Payloads hold ids, digests and counts only, never case content, so deleting a
tenant's cases never has to touch (or break) the chain.

The verifier (``ChainVerifier``) also cross-checks GOLD_LABEL_FROZEN events against the
gold-label rows: the per-case digest chain cannot see a row deleted or replaced wholesale
(digest recomputed), the ledger can. A record whose event exists but whose row is gone counts
as deleted only if the service could have deleted it (``_unaccounted``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from assay.services.adjudication.domain import records
from assay.services.adjudication.domain.digests import (
    GENESIS_HASH,
    canonical_json,
    encode_json,
    string_object_json,
    text_digest,
)
from assay.services.adjudication.domain.model import (
    Actor,
    AuditEvent,
    AuditEventType,
    AuditProblem,
    ChainHead,
    ChainVerdict,
    RecordKind,
)
from assay.services.adjudication.domain.times import rfc3339

EMPTY_HEAD = ChainHead(0, GENESIS_HASH)


def event_hash(
    sequence: int,
    event_type: AuditEventType,
    occur_time: datetime,
    payload: Mapping[str, str],
    previous_hash: str,
    actor: Actor | None = None,
) -> str:
    """``digest`` of {sequence, event_type, occur_time, payload, previous_hash} plus
    ``"actor": {"issuer", "subject"}`` when there is an actor.

    Every event is hashed once when written and again by each verification, so the
    canonical JSON is spelled out here (keys in sorted order, strings and the payload
    encoded canonically) instead of normalizing a dict; a property test holds it equal to
    ``digest`` of the same dict."""
    return _chain_hash(
        sequence, event_type, occur_time, canonical_json(payload), previous_hash, actor
    )


def rehash(event: AuditEvent) -> str:
    """The hash ``event``'s content should have: what every check of a stored event compares
    its ``hash`` with."""
    return event_hash(
        event.sequence,
        event.event_type,
        event.occur_time,
        event.payload,
        event.previous_hash,
        event.actor,
    )


def _chain_hash(
    sequence: int,
    event_type: AuditEventType,
    occur_time: datetime,
    payload_json: str,
    previous_hash: str,
    actor: Actor | None,
) -> str:
    who = (
        ""
        if actor is None
        else f'"actor":{{"issuer":{encode_json(actor.issuer)},'
        f'"subject":{encode_json(actor.subject)}}},'
    )
    text = (
        f'{{{who}"event_type":{encode_json(event_type.value)},'
        f'"occur_time":"{rfc3339(occur_time)}",'
        f'"payload":{payload_json},'
        f'"previous_hash":{encode_json(previous_hash)},'
        f'"sequence":{int(sequence)}}}'
    )
    return text_digest(text)


def next_event(
    head: ChainHead,
    event_type: AuditEventType,
    payload: Mapping[str, str],
    now: datetime,
    actor: Actor | None = None,
) -> AuditEvent:
    """The event that extends the chain after ``head``."""
    return extend(head, event_type, payload, now, actor)[0]


def extend(
    head: ChainHead,
    event_type: AuditEventType,
    payload: Mapping[str, str],
    now: datetime,
    actor: Actor | None = None,
) -> tuple[AuditEvent, str]:
    """``next_event``, with the payload's canonical JSON (what is stored) computed once."""
    fields = dict(payload)
    payload_json = string_object_json(fields)
    if payload_json is None:  # not plain strings: str subclasses pass, anything else not
        for key, value in fields.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError("audit payloads map strings to strings (ids, digests, counts)")
        payload_json = canonical_json(fields)
    sequence = head.sequence + 1
    event = AuditEvent(
        sequence=sequence,
        event_type=event_type,
        occur_time=now,
        payload=fields,
        previous_hash=head.hash,
        hash=_chain_hash(sequence, event_type, now, payload_json, head.hash, actor),
        actor=actor,
    )
    return event, payload_json


@dataclass
class ChainVerifier:
    """Feed events in sequence order (``check``), then gold-label rows (``finish``)."""

    head: ChainHead = EMPTY_HEAD
    checked: int = 0
    verdict: ChainVerdict | None = None
    frozen: dict[tuple[str, int], tuple[int, str]] = field(default_factory=dict)
    recorded: dict[tuple[RecordKind, str], tuple[int, Mapping[str, str]]] = field(
        default_factory=dict
    )
    # (sequence, tenants — None: every tenant —, as_of or None) of each deletion event.
    deletions: list[tuple[int, frozenset[str] | None, int | None]] = field(default_factory=list)
    present: set[tuple[RecordKind, str]] = field(default_factory=set)

    def _bad(self, sequence: int, problem: AuditProblem, detail: str, gold: str = "") -> bool:
        kind = RecordKind.GOLD_LABEL if gold else None
        self.verdict = ChainVerdict(
            False, self.checked, self.head, sequence, problem, detail, kind, gold
        )
        return False

    def check(self, event: AuditEvent) -> bool:
        """Check the next event; False (with ``verdict`` set) at the first bad one."""
        self.checked += 1
        if event.sequence != self.head.sequence + 1:
            return self._bad(
                event.sequence,
                AuditProblem.SEQUENCE_GAP,
                f"expected event {self.head.sequence + 1}, found {event.sequence}",
            )
        if event.previous_hash != self.head.hash:
            return self._bad(
                event.sequence, AuditProblem.BROKEN_LINK, "previous_hash is not the prior hash"
            )
        if rehash(event) != event.hash:
            return self._bad(
                event.sequence, AuditProblem.HASH_MISMATCH, "content does not match its hash"
            )
        if event.event_type is AuditEventType.GOLD_LABEL_FROZEN:
            try:
                key = (event.payload["case_id"], int(event.payload["revision"]))
                self.frozen[key] = (event.sequence, event.payload["digest"])
            except (KeyError, ValueError):
                return self._bad(
                    event.sequence, AuditProblem.UNREADABLE, "GOLD_LABEL_FROZEN payload incomplete"
                )
        self._note_deletion(event)
        record = records.record_key(event.event_type.value, event.payload)
        if record is not None:
            committed = records.committed(event.event_type.value, event.payload)
            self.recorded.setdefault(record, (event.sequence, committed))
        self.head = ChainHead(event.sequence, event.hash)
        return True

    def _note_deletion(self, event: AuditEvent) -> None:
        """Remember what a deletion event may have removed (one it cannot read accounts
        for nothing, so the records it would have covered are reported)."""
        payload = event.payload
        if event.event_type is AuditEventType.TENANT_RECORDS_DELETED:
            if "tenant" in payload:
                self.deletions.append((event.sequence, frozenset({payload["tenant"]}), None))
        elif event.event_type is AuditEventType.EXPIRED_RECORDS_SWEPT:
            named = payload.get("tenants")
            tenants = None if named is None else frozenset(named.split(","))
            as_of = payload.get("as_of", "")
            if as_of.isdigit():
                self.deletions.append((event.sequence, tenants, int(as_of)))

    def _unaccounted(self, kind: RecordKind, sequence: int, payload: Mapping[str, str]) -> str:
        """Why the row of a recorded record may not be missing ("" when a deletion by the
        service accounts for it).

        A tenant deletion or an expiry sweep removes cases, with their reviews and
        resolutions, and nothing else. So a missing reviewer is always reported, a missing
        review or resolution whenever its case's row is still there, and a missing case
        unless a later TENANT_RECORDS_DELETED names its tenant or a later
        EXPIRED_RECORDS_SWEPT covers its tenant and, when its CASE_ENQUEUED records the
        expiry (events written since ``expire_time`` was added), was swept as of that expiry
        or after. An older CASE_ENQUEUED holds no expiry: any later sweep covering the tenant
        accounts for it."""
        if kind is RecordKind.REVIEWER:
            return "its row is missing (reviewers are never deleted)"
        if kind in (RecordKind.APPROVAL, RecordKind.APPROVAL_STEP):
            return "its row is missing (approvals and their steps are never deleted)"
        if kind in (RecordKind.REVIEW, RecordKind.RESOLUTION, RecordKind.CASE_ASSIGNMENT):
            case_id = payload.get("case_id", "")
            if (RecordKind.CASE, case_id) in self.present:
                return f"its row is missing while its case {case_id} is still stored"
            return ""  # went with its case, whose own absence is judged below
        if kind is RecordKind.CASE:
            tenant = payload.get("tenant", "")
            expiry = payload.get("expire_time", "")
            for deleted_at, tenants, as_of in self.deletions:
                if deleted_at <= sequence or (tenants is not None and tenant not in tenants):
                    continue
                if as_of is None or not expiry.isdigit() or as_of >= int(expiry):
                    return ""
            return "its row is missing and no later tenant deletion or expiry sweep covers it"
        return ""  # gold labels: checked against their rows in ``_finish_gold``

    def unreadable(self, sequence: int, detail: str) -> bool:
        self.checked += 1
        return self._bad(sequence, AuditProblem.UNREADABLE, detail)

    def finish(
        self,
        gold_rows: Iterable[tuple[str, int, str, str]],
        stored: Iterable[tuple[RecordKind, str, records.Commitment | None]] | None = None,
    ) -> ChainVerdict:
        """Cross-check (case_id, revision, stored digest, recomputed digest) of every gold row,
        then every ``stored`` record (kind, id, the commitment recomputed from its row — None
        when the row cannot be read or fails its own digest) against the event that recorded
        it, and every recorded record without a row (see ``_unaccounted``: only what a
        tenant deletion or sweep removed may be missing); the first disagreeing record (by
        its event's sequence) is named. ``stored`` None: no rows given, only the chain and
        the gold rows are checked."""
        if self.verdict is not None:
            return self.verdict
        gold = self._finish_gold(gold_rows)
        if not gold.ok:
            return gold
        worst: tuple[float, RecordKind, str, AuditProblem, str] | None = None
        for kind, record_id, expected in stored or ():
            self.present.add((kind, record_id))
            found = self.recorded.get((kind, record_id))
            if found is None:
                problem = (
                    0.0,
                    kind,
                    record_id,
                    AuditProblem.UNRECORDED_RECORD,
                    "no ledger event recorded it",
                )
            else:
                why = records.disagreement(expected, found[1])
                if not why:
                    continue
                problem = (float(found[0]), kind, record_id, AuditProblem.RECORD_MISMATCH, why)
            order = (problem[0] or float("inf"), problem[1].value, problem[2])
            if worst is None or order < (worst[0] or float("inf"), worst[1].value, worst[2]):
                worst = problem
        # Recorded records without a row, unless the service's deletions account for them
        # (``stored`` None: the rows were not given, only the chain and gold labels checked).
        missing = self.recorded.items() if stored is not None else ()
        for (kind, record_id), (recorded_at, payload) in missing:
            first = float("inf") if worst is None else worst[0] or float("inf")
            if (kind, record_id) in self.present or first < recorded_at:
                continue
            why = self._unaccounted(kind, recorded_at, payload)
            if why:
                worst = (float(recorded_at), kind, record_id, AuditProblem.RECORD_MISMATCH, why)
        if worst is None:
            return gold
        sequence, kind, record_id, what, why = worst
        name = kind.value.lower().replace("_", " ")
        self.verdict = ChainVerdict(
            False,
            self.checked,
            self.head,
            int(sequence),
            what,
            f"{name} {record_id}: {why}",
            kind,
            record_id,
        )
        return self.verdict

    def _finish_gold(self, gold_rows: Iterable[tuple[str, int, str, str]]) -> ChainVerdict:
        seen: set[tuple[str, int]] = set()
        for case_id, revision, stored, recomputed in gold_rows:
            key = (case_id, revision)
            seen.add(key)
            recorded = self.frozen.get(key)
            if recorded is None:
                self._bad(
                    0,
                    AuditProblem.UNRECORDED_GOLD_LABEL,
                    f"gold label {case_id}#{revision} has no GOLD_LABEL_FROZEN event",
                    f"{case_id}#{revision}",
                )
                return self._final()
            sequence, recorded_digest = recorded
            if recorded_digest != stored or stored != recomputed:
                self._bad(
                    sequence,
                    AuditProblem.GOLD_LABEL_MISMATCH,
                    f"gold label {case_id}#{revision} differs from what event {sequence} recorded",
                    f"{case_id}#{revision}",
                )
                return self._final()
        for key, (sequence, _) in sorted(self.frozen.items(), key=lambda kv: kv[1][0]):
            if key not in seen:
                self._bad(
                    sequence,
                    AuditProblem.GOLD_LABEL_MISMATCH,
                    f"gold label {key[0]}#{key[1]} recorded by event {sequence} is missing",
                    f"{key[0]}#{key[1]}",
                )
                return self._final()
        return ChainVerdict(True, self.checked, self.head)

    def _final(self) -> ChainVerdict:
        assert self.verdict is not None
        return self.verdict

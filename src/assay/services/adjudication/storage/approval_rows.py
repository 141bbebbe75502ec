"""Approval rows for both engines: their columns, decoding, parameters and read statements.

Two insert-only tables (``ddl.APPROVALS``): ``approvals`` (one row per request, its content
digested and committed by its APPROVAL_REQUESTED event) and ``approval_steps`` (one row per
step, keyed by approval and ``seq``, each committed by its own event). The reads are
written once here, each engine passing its parameter markers and tenant filter; each
engine inserts the rows its own way, from these columns and parameters.
Decoding a row that no longer holds a valid value is DATA_LOSS naming it, as for every
other record.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from assay.errors import DataLoss, Reason
from assay.services.adjudication.domain.approvals import (
    Approval,
    ApprovalCandidate,
    Step,
    StepKind,
)
from assay.services.adjudication.domain.model import Actor
from assay.services.adjudication.domain.times import from_micros, to_micros
from assay.services.adjudication.storage.rows import Row

APPROVAL_COLUMNS = (
    "approval_id, tenant, subject, predicate, candidate_id, probe, target_signal_class, "
    "availability, required_side_effects, missing_grants, blocking_reasons, candidate_digest, "
    "candidate_detail, requester_issuer, requester_subject, reason, request_time, expire_time, "
    "grant_lifetime_micros, quorum, deny_ends, content_digest"
)
STEP_COLUMNS = (
    "approval_id, seq, kind, actor_issuer, actor_subject, reason, occur_time, candidate_digest"
)
# A step that ends the approval for good, whatever the clock says (DENIED may not: the
# policy decides whether one denial ends it).
FINAL_STEPS = ("CONSUMED", "REVOKED", "EXPIRED")


def _corrupt(what: str, key: object, error: Exception) -> DataLoss:
    return DataLoss(
        Reason.STORED_RECORD_INVALID,
        f"stored {what} {key} cannot be read ({error})",
        metadata={"record": what, "key": str(key)},
    )


def _names(text: str) -> tuple[str, ...]:
    found = json.loads(text)
    if not isinstance(found, list) or not all(isinstance(n, str) for n in found):
        raise ValueError("expected a list of names")
    return tuple(found)


def approval(row: Row) -> Approval:
    try:
        return Approval(
            approval_id=row["approval_id"],
            tenant=row["tenant"],
            subject=row["subject"],
            predicate=row["predicate"],
            candidate=ApprovalCandidate(
                candidate_id=row["candidate_id"],
                probe=row["probe"],
                target_signal_class=row["target_signal_class"],
                availability=row["availability"],
                required_side_effects=_names(row["required_side_effects"]),
                missing_grants=_names(row["missing_grants"]),
                blocking_reasons=_names(row["blocking_reasons"]),
                candidate_digest=row["candidate_digest"],
                detail=row["candidate_detail"],
            ),
            requester=Actor(row["requester_issuer"], row["requester_subject"]),
            reason=row["reason"],
            request_time=from_micros(int(row["request_time"])),
            expire_time=from_micros(int(row["expire_time"])),
            grant_lifetime=timedelta(microseconds=int(row["grant_lifetime_micros"])),
            quorum=int(row["quorum"]),
            deny_ends=bool(row["deny_ends"]),
            content_digest=row["content_digest"],
        )
    except (ValueError, TypeError, OverflowError) as error:
        raise _corrupt("approval", row["approval_id"], error) from None


def approval_params(value: Approval) -> tuple[Any, ...]:
    c = value.candidate
    return (
        value.approval_id,
        value.tenant,
        value.subject,
        value.predicate,
        c.candidate_id,
        c.probe,
        c.target_signal_class,
        c.availability,
        json.dumps(list(c.required_side_effects)),
        json.dumps(list(c.missing_grants)),
        json.dumps(list(c.blocking_reasons)),
        c.candidate_digest,
        c.detail,
        value.requester.issuer,
        value.requester.subject,
        value.reason,
        to_micros(value.request_time),
        to_micros(value.expire_time),
        value.grant_lifetime // timedelta(microseconds=1),
        value.quorum,
        1 if value.deny_ends else 0,
        value.content_digest,
    )


def step(row: Row) -> Step:
    try:
        issuer, subject = row["actor_issuer"], row["actor_subject"]
        return Step(
            approval_id=row["approval_id"],
            seq=int(row["seq"]),
            kind=StepKind(row["kind"]),
            actor=Actor(issuer, subject) if subject else None,
            reason=row["reason"],
            occur_time=from_micros(int(row["occur_time"])),
            candidate_digest=row["candidate_digest"],
        )
    except (ValueError, TypeError, OverflowError) as error:
        raise _corrupt("approval step", f"{row['approval_id']}#{row['seq']}", error) from None


def step_params(value: Step) -> tuple[Any, ...]:
    actor = value.actor
    return (
        value.approval_id,
        value.seq,
        value.kind.value,
        "" if actor is None else actor.issuer,
        "" if actor is None else actor.subject,
        value.reason,
        to_micros(value.occur_time),
        value.candidate_digest,
    )


def one_sql(approval_id: str, lock: str = "") -> str:
    """The approval the marker ``approval_id`` names; ``lock``: the engine's row lock (" FOR
    UPDATE" on PostgreSQL, so changes to one approval run one after the other)."""
    return f"SELECT {APPROVAL_COLUMNS} FROM approvals WHERE approval_id = {approval_id}{lock}"


def steps_sql(ids: str) -> str:
    """The steps of the approvals ``ids`` selects (the engine's ``IN (...)`` or ``= ANY(...)``
    over ``approval_id``), in approval then ``seq`` order."""
    return (
        f"SELECT {STEP_COLUMNS} FROM approval_steps WHERE approval_id {ids} "
        "ORDER BY approval_id, seq"
    )


def page_sql(in_scope: str, limit: str, after: tuple[str, str] | None = None) -> str:
    """A page newest first: ``in_scope`` is the engine's tenant filter on ``tenant``;
    ``after``, the markers of the last row's request time and id."""
    where = in_scope
    if after is not None:
        time, key = after
        where += f" AND (request_time < {time} OR (request_time = {time} AND approval_id < {key}))"
    return (
        f"SELECT {APPROVAL_COLUMNS} FROM approvals WHERE {where} "
        f"ORDER BY request_time DESC, approval_id DESC LIMIT {limit}"
    )


def open_sql(limit: str) -> str:
    """Approvals with no final step, earliest pending deadline first."""
    finals = ", ".join(f"'{kind}'" for kind in FINAL_STEPS)
    return (
        f"SELECT {APPROVAL_COLUMNS} FROM approvals WHERE NOT EXISTS ("
        "SELECT 1 FROM approval_steps s WHERE s.approval_id = approvals.approval_id "
        f"AND s.kind IN ({finals})) ORDER BY expire_time LIMIT {limit}"
    )


def with_steps(
    found: Iterable[Approval], steps: Iterable[Step]
) -> list[tuple[Approval, list[Step]]]:
    """Each approval with its steps (``steps`` in approval then ``seq`` order)."""
    by_id: dict[str, list[Step]] = {}
    for value in steps:
        by_id.setdefault(value.approval_id, []).append(value)
    return [(a, by_id.get(a.approval_id, [])) for a in found]

"""The tamper matrix's vocabulary: the read RPCs a scenario checks, the scenario record,
and the attacker's edits (single statements, forged copies, swaps, renumberings, deleted
events, and the full rewrite through ``reforge``), each a function of the attacker's
connection (``tamper_sql.Raw``, either engine) and the pristine database's ids so the table
in ``test_tamper_matrix`` reads as data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from assay.services.adjudication.domain.digests import canonical_json
from assay.services.adjudication.storage import approval_rows, rows
from assay.v1 import adjudication_service_pb2 as pb
from tests.service import tamper_approvals
from tests.service.adjudication_support import TIMEOUT
from tests.service.tamper_sql import Raw, copy_row
from tests.service.tamper_support import Ids, Served, event_sequence, gold_digest, reforge, swap

REVIEWER = pb.RECORD_KIND_REVIEWER
CASE = pb.RECORD_KIND_CASE
REVIEW = pb.RECORD_KIND_REVIEW
RESOLUTION = pb.RECORD_KIND_RESOLUTION
GOLD = pb.RECORD_KIND_GOLD_LABEL
APPROVAL = pb.RECORD_KIND_APPROVAL
STEP = pb.RECORD_KIND_APPROVAL_STEP

Named = set[tuple[int, str]]
Db = Raw

# --- reads: (rpc, argument) -> the call; a case or approval argument is a role in Ids or an id


def call(served: Served, ids: Ids, read: tuple[str, str]) -> Any:
    rpc, arg = read
    if rpc in ("GetApproval", "ListApprovals"):
        return tamper_approvals.read(served.approvals, rpc, ids.approvals.get(arg, arg))
    if rpc in ("ConsumeApproval", "DecideApproval"):
        return tamper_approvals.write(served.approvals, rpc, arg, ids.approvals[arg])
    stub = served.stub
    case_id = ids.cases.get(arg, arg)
    t = TIMEOUT
    calls: dict[str, Callable[[], Any]] = {
        "GetReviewer": lambda: stub.GetReviewer(pb.GetReviewerRequest(reviewer_id=arg), timeout=t),
        "ListReviewers": lambda: stub.ListReviewers(
            pb.ListReviewersRequest(page_size=100), timeout=t
        ),
        "ListQueue": lambda: stub.ListQueue(pb.ListQueueRequest(reviewer_id=arg), timeout=t),
        "GetCase": lambda: stub.GetCase(pb.GetCaseRequest(case_id=case_id), timeout=t),
        "GetCaseState": lambda: stub.GetCaseState(
            pb.GetCaseStateRequest(case_id=case_id), timeout=t
        ),
        "GetBlindedCase": lambda: stub.GetBlindedCase(
            pb.GetBlindedCaseRequest(case_id=case_id), timeout=t
        ),
        "ListGoldLabelRevisions": lambda: stub.ListGoldLabelRevisions(
            pb.ListGoldLabelRevisionsRequest(case_id=case_id, page_size=100), timeout=t
        ),
        "ExportCorpus": lambda: stub.ExportCorpus(pb.ExportCorpusRequest(), timeout=t),
        "ListAuditEvents": lambda: stub.ListAuditEvents(
            pb.ListAuditEventsRequest(page_size=1000), timeout=t
        ),
        "ListCases": lambda: stub.ListCases(pb.ListCasesRequest(page_size=100), timeout=t),
        # A write that decides on the case's assignment: hana (assigned) reviews it.
        "SubmitReview": lambda: stub.SubmitReview(_hana_reviews(case_id), timeout=t),
    }
    return calls[rpc]()


def _hana_reviews(case_id: str) -> pb.SubmitReviewRequest:
    request = pb.SubmitReviewRequest(
        case_id=case_id, reviewer_id="hu-hana", outcome=pb.REVIEW_OUTCOME_LABEL
    )
    request.label.string_value = "key"
    return request


def label(read: tuple[str, str]) -> str:
    return f"{read[0]}({read[1]})" if read[1] else read[0]


# --- the scenarios ---------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    id: str  # table/column class/tamper
    tamper: Callable[[Db, Ids], None]
    named: Callable[[Ids], Named] | None = None  # the record(s) the verdict may name
    sequence: Callable[[Db, Ids], int] | None = None  # the first bad event, for the ledger
    reads: tuple[tuple[str, str], ...] = ()  # each must be DATA_LOSS
    gone: tuple[tuple[str, str], ...] = ()  # each must not serve the deleted record
    writes: tuple[tuple[str, str], ...] = ()  # each refused with DATA_LOSS (after the reads)
    rewritten: bool = False  # the checkpoint check applies (and, for a rewrite, only it)
    verdict: bool = True


def sql(statement: str, *params: Callable[[Ids], object]) -> Callable[[Db, Ids], None]:
    """An attacker's single statement; it must change at least one row."""

    def tamper(db: Db, ids: Ids) -> None:
        assert db.execute(statement, *(p(ids) for p in params)) >= 1, statement

    return tamper


def forged_copy(
    table: str, where: str, *params: Callable[[Ids], object], **new: object
) -> Callable[[Db, Ids], None]:
    """A row copied from the one matching ``where``, with ``new`` values (callables take
    the ids)."""

    def tamper(db: Db, ids: Ids) -> None:
        values = {k: v(ids) if callable(v) else v for k, v in new.items()}
        copy_row(db, table, where, *(p(ids) for p in params), **values)

    return tamper


def then_reforge(*steps: Callable[[Db, Ids], None]) -> Callable[[Db, Ids], None]:
    def tamper(db: Db, ids: Ids) -> None:
        for step in steps:
            step(db, ids)
        assert reforge(db) > 0, "the forger changed no event"

    return tamper


def case(role: str) -> Callable[[Ids], str]:
    return lambda ids: ids.cases[role]


def rev(key: str) -> Callable[[Ids], str]:
    return lambda ids: ids.reviews[key]


def gold_named(role: str, revision: int) -> Callable[[Ids], Named]:
    return lambda ids: {(GOLD, f"{ids.cases[role]}#{revision}")}


def resolution_named(role: str, round_: int) -> Callable[[Ids], Named]:
    return lambda ids: {(RESOLUTION, f"{ids.cases[role]}#{round_}")}


def review_named(key: str) -> Callable[[Ids], Named]:
    return lambda ids: {(REVIEW, ids.reviews[key])}


def reviewers_named(*names: str) -> Callable[[Ids], Named]:
    return lambda ids: {(REVIEWER, name) for name in names}


def approval(role: str) -> Callable[[Ids], str]:
    return lambda ids: ids.approvals[role]


def approvals_named(*roles: str) -> Callable[[Ids], Named]:
    """The approvals of ``roles`` (an unknown role is taken as an id)."""
    return lambda ids: {(APPROVAL, ids.approvals.get(role, role)) for role in roles}


def assignments_named(*changes: str) -> Callable[[Ids], Named]:
    """The assignment changes ``"<role>#<change>"``."""

    def named(ids: Ids) -> Named:
        return {
            (pb.RECORD_KIND_CASE_ASSIGNMENT, f"{ids.cases[c.split('#')[0]]}#{c.split('#')[1]}")
            for c in changes
        }

    return named


def steps_named(*steps: str) -> Callable[[Ids], Named]:
    """The steps ``"<role>#<seq>"``."""

    def named(ids: Ids) -> Named:
        return {(STEP, f"{ids.approvals[s.split('#')[0]]}#{s.split('#')[1]}") for s in steps}

    return named


def event_at(event_type: str, **payload: Callable[[Ids], str] | str) -> Callable[[Db, Ids], int]:
    def find(db: Db, ids: Ids) -> int:
        found = {k: v if isinstance(v, str) else v(ids) for k, v in payload.items()}
        return event_sequence(db, event_type, **found)

    return find


def edit_payload(find: Callable[[Db, Ids], int], key: str, value: str) -> Callable[[Db, Ids], None]:
    def tamper(db: Db, ids: Ids) -> None:
        sequence = find(db, ids)
        if db.postgres:
            changed = f"jsonb_set(payload, '{{{key}}}', to_jsonb(?::text))"
        else:
            changed = f"json_set(payload, '$.{key}', ?)"
        done = db.execute(
            f"UPDATE audit_events SET payload = {changed} WHERE sequence = ?", value, sequence
        )
        assert done == 1

    return tamper


def next_after(find: Callable[[Db, Ids], int]) -> Callable[[Db, Ids], int]:
    return lambda db, ids: find(db, ids) + 1


def last_event(db: Db, _: Ids) -> int:
    return int(db.one("SELECT max(sequence) AS last FROM audit_events")["last"])


def append_copy_of_last(db: Db, ids: Ids) -> None:
    last = last_event(db, ids)
    copy_row(db, "audit_events", "sequence = ?", last, sequence=last + 1)


def swap_events(a: int, b: int) -> Callable[[Db, Ids], None]:
    cols = "event_type, occur_time, payload, previous_hash, hash, tenant"
    return lambda db, _: swap(db, "audit_events", "sequence", a, b, cols)


def swap_reviewers(db: Db, _: Ids) -> None:
    cols = "kind, attested_by, register_time, identity_issuer, identity_subject"
    swap(db, "reviewers", "reviewer_id", "fx-ann", "hu-hana", cols)


def swap_cases(db: Db, ids: Ids) -> None:
    cols = (
        "subject, predicate, candidate_values, evidence_refs, context, local_verdict, "
        "lineage_origin, lineage_ref, create_time, expire_time, content_digest"
    )
    swap(db, "cases", "case_id", ids.cases["open"], ids.cases["split"], cols)


def swap_reviews(db: Db, ids: Ids) -> None:
    a, b = ids.reviews["split/hu-hana"], ids.reviews["split/hu-hugo"]
    swap(db, "reviews", "review_id", a, b, "outcome, label_key, reason, salt")


def renumber_resolutions(db: Db, ids: Ids) -> None:
    agree = ids.cases["agree"]
    for old, new in ((1, 3), (2, 1), (3, 2)):
        db.execute(
            "UPDATE resolutions SET round = ? WHERE case_id = ? AND round = ?", new, agree, old
        )


def renumber_gold(db: Db, ids: Ids) -> None:
    cols = "basis, label_key, contributing_review_ids, contributing_reviewer_ids, freeze_time"
    names = [c.strip() for c in cols.split(",")]
    key = "case_id = ? AND revision"
    agree = ids.cases["agree"]
    first = db.one(f"SELECT {cols} FROM gold_labels WHERE {key} = 1", agree)
    second = db.one(f"SELECT {cols} FROM gold_labels WHERE {key} = 2", agree)
    sets = ", ".join(f"{n} = ?" for n in names)
    db.execute(f"UPDATE gold_labels SET {sets} WHERE {key} = 1", *(second[n] for n in names), agree)
    db.execute(f"UPDATE gold_labels SET {sets} WHERE {key} = 2", *(first[n] for n in names), agree)


def forged_gold(db: Db, ids: Ids) -> None:
    """A gold row for the open case copied from the split case's, with its digest recomputed
    by the service's own function, so the row passes its own check."""
    copy_row(db, "gold_labels", "case_id = ?", ids.cases["split"], case_id=ids.cases["open"])
    sel = f"SELECT {rows.GOLD_COLUMNS} FROM gold_labels WHERE case_id = ?"
    row = db.one(sel, ids.cases["open"])
    db.execute(
        "UPDATE gold_labels SET digest = ? WHERE case_id = ?",
        gold_digest(rows.gold_fields(row)),
        ids.cases["open"],
    )


def delete_open_case(db: Db, ids: Ids) -> None:
    """The open case gone with its review, and no TENANT_RECORDS_DELETED to say why."""
    db.execute("DELETE FROM reviews WHERE case_id = ?", ids.cases["open"])
    db.execute("DELETE FROM cases WHERE case_id = ?", ids.cases["open"])


def delete_event(find: Callable[[Db, Ids], int]) -> Callable[[Db, Ids], None]:
    def tamper(db: Db, ids: Ids) -> None:
        assert db.execute("DELETE FROM audit_events WHERE sequence = ?", find(db, ids)) == 1

    return tamper


def delete_event_and_record(db: Db, ids: Ids) -> None:
    """History rewritten to hide a review: its row and its event gone, later events
    renumbered (the forger re-chains them)."""
    review_id = ids.reviews["open/fx-ann"]
    db.execute("DELETE FROM reviews WHERE review_id = ?", review_id)
    sequence = event_sequence(db, "REVIEW_SUBMITTED", review_id=review_id)
    db.execute("DELETE FROM audit_events WHERE sequence = ?", sequence)


# --- approvals (``tamper_approvals``: consumed, pending, denied) -----------------------


def delete_approval(role: str) -> Callable[[Db, Ids], None]:
    """An approval gone with its steps (no deletion by the service ever accounts for one)."""

    def tamper(db: Db, ids: Ids) -> None:
        db.execute("DELETE FROM approval_steps WHERE approval_id = ?", ids.approvals[role])
        assert db.execute("DELETE FROM approvals WHERE approval_id = ?", ids.approvals[role]) == 1

    return tamper


def swap_approvals(db: Db, ids: Ids) -> None:
    """The pending and the denied request exchange everything but their ids."""
    cols = approval_rows.APPROVAL_COLUMNS.removeprefix("approval_id, ")
    swap(db, "approvals", "approval_id", ids.approvals["pending"], ids.approvals["denied"], cols)


def renumber_steps(db: Db, ids: Ids) -> None:
    """The consumed approval's use moved before its second approval (steps 2 and 3)."""
    consumed = ids.approvals["consumed"]
    for old, new in ((2, 99), (3, 2), (99, 3)):
        done = db.execute(
            "UPDATE approval_steps SET seq = ? WHERE approval_id = ? AND seq = ?",
            new,
            consumed,
            old,
        )
        assert done == 1


def denial_made_grant(db: Db, ids: Ids) -> None:
    """The denied approval's one step turned into an approval, and its APPROVAL_DENIED event
    into the APPROVAL_GRANTED one that step would have caused (for ``reforge`` to re-chain)."""
    denied = ids.approvals["denied"]
    where = "approval_id = ? AND seq = 1"
    assert db.execute(f"UPDATE approval_steps SET kind = 'APPROVED' WHERE {where}", denied) == 1
    occur = int(
        db.one(f"SELECT occur_time FROM approval_steps WHERE {where}", denied)["occur_time"]
    )
    lifetime = db.one("SELECT grant_lifetime_micros FROM approvals WHERE approval_id = ?", denied)
    payload = {
        "approval_id": denied,
        "step": "1",
        "grant_expire_time": str(occur + int(lifetime["grant_lifetime_micros"])),
    }
    done = db.execute(
        "UPDATE audit_events SET event_type = 'APPROVAL_GRANTED', payload = ? WHERE sequence = ?",
        canonical_json(payload),
        event_sequence(db, "APPROVAL_DENIED", approval_id=denied),
    )
    assert done == 1

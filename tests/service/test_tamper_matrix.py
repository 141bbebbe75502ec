"""The tamper matrix: every table and column class of the adjudication database edited,
deleted, inserted, reordered and — the strongest attack — rewritten with every digest and
the whole ledger recomputed, each through a real server on a copy of one populated
database, on both engines (``module_db``: a SQLite file, a PostgreSQL database; the
attacker's SQL is ``tamper_sql``'s, so every scenario is the same edit on each).

What each scenario must show (one test per check, so a gap is named to the read):
- ``verdict``: VerifyAuditChain is not ok, and names the tampered record (kind and id) or,
  for the ledger itself, the first bad event;
- one test per read RPC that returns the tampered record: it fails with DATA_LOSS — not
  INTERNAL, not a silently different answer;
- ``gone``: a deleted record is not served as if nothing happened;
- ``write``: a change that would build on the tampered record (using or deciding on an
  approval, reviewing a case by its assignment) is refused with DATA_LOSS, after the reads;
- ``checkpoint``: a rewritten history does not extend the checkpoint saved before it
  (RFC 6962 consistency, both notes verified with the ledger key) — for a full rewrite this
  is the only check that can see it, since the database is self-consistent.
The controls — the untouched copy, and a tenant deletion the service does itself — pass
every one of those checks, so none of them fails for a reason other than the tampering.

Approvals (``approvals``, ``approval_steps``) need an authenticated caller and the matrix's
server is dev mode, so their reads (GetApproval, ListApprovals) and changes call the
running server's own ApprovalService servicer with an authenticated principal bound, as
the runtime binds one after its gate (``tamper_approvals``), on the same store and ledger;
an error becomes the status code the runtime's error table gives it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.services.adjudication.domain import ledger
from assay.services.adjudication.domain.digests import canonical_json
from assay.services.adjudication.storage import rows as ledger_rows
from assay.v1 import adjudication_service_pb2 as pb
from tests.service.adjudication_support import TIMEOUT, rid
from tests.service.tamper_approvals import REQUESTER
from tests.service.tamper_edits import (
    CASE,
    REVIEW,
    Scenario,
    append_copy_of_last,
    approval,
    approvals_named,
    assignments_named,
    call,
    case,
    delete_approval,
    delete_event,
    delete_event_and_record,
    delete_open_case,
    denial_made_grant,
    edit_payload,
    event_at,
    forged_copy,
    forged_gold,
    gold_named,
    label,
    last_event,
    next_after,
    renumber_gold,
    renumber_resolutions,
    renumber_steps,
    resolution_named,
    rev,
    review_named,
    reviewers_named,
    sql,
    steps_named,
    swap_approvals,
    swap_cases,
    swap_events,
    swap_reviewers,
    swap_reviews,
    then_reforge,
)
from tests.service.tamper_sql import Copies, tampering
from tests.service.tamper_support import (
    Pristine,
    build,
    extends_checkpoint,
    serve,
    status_of,
)
from tests.support.processes import assay_command

# ListCases reads every case as GetCaseState does: whatever that read catches, it catches.
SPLIT_READS = (("GetCase", "split"), ("GetCaseState", "split"), ("ListCases", ""))
OPEN_READS = (
    ("GetCase", "open"),
    ("GetCaseState", "open"),
    ("ListQueue", "fx-bob"),
    ("ListCases", ""),
)
FORGED_CASE_READS = (
    ("GetCase", "case-forged"),
    ("GetCaseState", "case-forged"),
    ("GetBlindedCase", "case-forged"),
    ("ListQueue", "fx-bob"),
    ("ListCases", ""),
)
HUGO = "split/hu-hugo"
HUGO_EVENT = event_at("REVIEW_SUBMITTED", review_id=rev(HUGO))
NOW_PLUS = "+ 1000000"
ANN, BOB = "reviewer_id = 'fx-ann'", "reviewer_id = 'fx-bob'"
APPROVAL_LIST = ("ListApprovals", "")
PENDING_READS = (("GetApproval", "pending"), APPROVAL_LIST)
CONSUMED_READS = (("GetApproval", "consumed"), APPROVAL_LIST)
DENIED_READS = (("GetApproval", "denied"), APPROVAL_LIST)
FIRST = "seq = 1"
HANA_1 = "change = 1 AND reviewer_id = 'hu-hana'"
ASSIGNED_READS = (("GetCase", "assigned"), ("ListQueue", "hu-hana"), ("ListCases", ""))
FORGED_DIGEST = "sha256:" + "ab" * 32

SCENARIOS: tuple[Scenario, ...] = (
    # reviewers
    Scenario(
        "reviewers/identity/edit",
        sql("UPDATE reviewers SET reviewer_id = 'fx-eve' WHERE reviewer_id = 'fx-bob'"),
        named=reviewers_named("fx-eve", "fx-bob"),
        reads=(("GetReviewer", "fx-eve"), ("ListReviewers", "")),
    ),
    Scenario(
        "reviewers/kind/edit",
        sql("UPDATE reviewers SET kind = 'HUMAN', attested_by = 'x' WHERE reviewer_id = 'fx-bob'"),
        named=reviewers_named("fx-bob"),
        reads=(("GetReviewer", "fx-bob"), ("ListReviewers", ""), ("ListQueue", "fx-bob")),
    ),
    Scenario(
        "reviewers/content/edit",
        sql("UPDATE reviewers SET attested_by = 'someone-else' WHERE reviewer_id = 'hu-hana'"),
        named=reviewers_named("hu-hana"),
        reads=(("GetReviewer", "hu-hana"), ("ListReviewers", "")),
    ),
    Scenario(
        "reviewers/time/edit",
        sql(f"UPDATE reviewers SET register_time = register_time {NOW_PLUS} WHERE {ANN}"),
        named=reviewers_named("fx-ann"),
        reads=(("GetReviewer", "fx-ann"), ("ListReviewers", "")),
    ),
    Scenario(
        "reviewers/row/delete",
        sql("DELETE FROM reviewers WHERE reviewer_id = 'fx-bob'"),
        named=reviewers_named("fx-bob"),
        gone=(("GetReviewer", "fx-bob"),),
    ),
    Scenario(
        "reviewers/row/insert",
        forged_copy("reviewers", "reviewer_id = 'hu-hana'", reviewer_id="hu-eve"),
        named=reviewers_named("hu-eve"),
        reads=(("GetReviewer", "hu-eve"), ("ListReviewers", "")),
    ),
    Scenario(
        "reviewers/row/reorder",
        swap_reviewers,
        named=reviewers_named("fx-ann", "hu-hana"),
        reads=(("GetReviewer", "fx-ann"), ("GetReviewer", "hu-hana"), ("ListReviewers", "")),
    ),
    Scenario(
        "reviewers/kind/rewrite",
        then_reforge(sql(f"UPDATE reviewers SET kind = 'HUMAN', attested_by = 'x' WHERE {BOB}")),
        rewritten=True,
        verdict=False,
    ),
    # cases
    Scenario(
        "cases/identity/edit",
        sql("UPDATE cases SET case_id = 'case-forged' WHERE case_id = ?", case("open")),
        named=lambda ids: {
            (CASE, "case-forged"),
            (CASE, ids.cases["open"]),
            (REVIEW, ids.reviews["open/fx-ann"]),
        },
        reads=FORGED_CASE_READS,
    ),
    Scenario(
        "cases/tenant/edit",
        sql("UPDATE cases SET tenant = 'tenant-b' WHERE case_id = ?", case("split")),
        named=lambda ids: {(CASE, ids.cases["split"])},
        reads=(*SPLIT_READS, ("GetBlindedCase", "split"), ("ExportCorpus", "")),
    ),
    Scenario(
        "cases/verdict/edit",
        sql("UPDATE cases SET local_verdict = '\"none\"' WHERE case_id = ?", case("split")),
        named=lambda ids: {(CASE, ids.cases["split"])},
        reads=(*SPLIT_READS, ("GetBlindedCase", "split")),
    ),
    Scenario(
        "cases/content/edit",
        sql("UPDATE cases SET subject = 'api:forged' WHERE case_id = ?", case("split")),
        named=lambda ids: {(CASE, ids.cases["split"])},
        reads=(*SPLIT_READS, ("GetBlindedCase", "split"), ("ExportCorpus", "")),
    ),
    Scenario(
        # Fewer reviews would let a round be decided early; the count is digested.
        "cases/overlap/edit",
        sql("UPDATE cases SET required_reviews = 3 WHERE case_id = ?", case("open")),
        named=lambda ids: {(CASE, ids.cases["open"])},
        reads=OPEN_READS,
    ),
    Scenario(
        "cases/provenance/edit",
        sql("UPDATE cases SET lineage_origin = 'forged' WHERE case_id = ?", case("split")),
        named=lambda ids: {(CASE, ids.cases["split"])},
        reads=(*SPLIT_READS, ("GetBlindedCase", "split")),
    ),
    Scenario(
        "cases/time/edit",
        sql(
            f"UPDATE cases SET expire_time = expire_time {NOW_PLUS} WHERE case_id = ?", case("open")
        ),
        named=lambda ids: {(CASE, ids.cases["open"])},
        reads=(*OPEN_READS, ("GetBlindedCase", "open")),
    ),
    Scenario(
        "cases/row/delete",
        delete_open_case,
        named=lambda ids: {(CASE, ids.cases["open"]), (REVIEW, ids.reviews["open/fx-ann"])},
        gone=(("GetCase", "open"),),
    ),
    Scenario(
        "cases/row/insert",
        forged_copy("cases", "case_id = ?", case("open"), case_id="case-forged"),
        named=lambda ids: {(CASE, "case-forged")},
        reads=FORGED_CASE_READS,
    ),
    Scenario(
        "cases/row/reorder",
        swap_cases,
        named=lambda ids: {(CASE, ids.cases["open"]), (CASE, ids.cases["split"])},
        reads=(("GetCase", "open"), ("GetBlindedCase", "open"), ("GetCase", "split")),
    ),
    Scenario(
        "cases/content/rewrite",
        then_reforge(
            sql("UPDATE cases SET subject = 'api:forged' WHERE case_id = ?", case("split"))
        ),
        rewritten=True,
        verdict=False,
    ),
    # reviews
    Scenario(
        "reviews/identity/edit",
        sql("UPDATE reviews SET reviewer_id = 'hu-ada' WHERE review_id = ?", rev(HUGO)),
        named=review_named(HUGO),
        reads=SPLIT_READS,
    ),
    Scenario(
        "reviews/label/edit",
        sql("UPDATE reviews SET label_key = '\"key\"' WHERE review_id = ?", rev(HUGO)),
        named=review_named(HUGO),
        reads=SPLIT_READS,
    ),
    Scenario(
        "reviews/outcome/edit",
        sql(
            "UPDATE reviews SET outcome = 'NOT_EVALUABLE', label_key = '', reason = 'unclear' "
            "WHERE review_id = ?",
            rev(HUGO),
        ),
        named=review_named(HUGO),
        reads=SPLIT_READS,
    ),
    Scenario(
        "reviews/time/edit",
        sql(
            f"UPDATE reviews SET submit_time = submit_time {NOW_PLUS} WHERE review_id = ?",
            rev(HUGO),
        ),
        named=review_named(HUGO),
        reads=SPLIT_READS,
    ),
    Scenario(
        "reviews/row/delete",
        sql("DELETE FROM reviews WHERE review_id = ?", rev(HUGO)),
        named=lambda ids: review_named(HUGO)(ids) | resolution_named("split", 1)(ids),
    ),
    Scenario(
        "reviews/row/insert",
        forged_copy(
            "reviews",
            "review_id = ?",
            rev("open/fx-ann"),
            review_id="rev-forged",
            reviewer_id="fx-bob",
        ),
        named=lambda ids: {(REVIEW, "rev-forged")},
        reads=OPEN_READS,
    ),
    Scenario(
        "reviews/row/reorder",
        swap_reviews,
        named=lambda ids: review_named(HUGO)(ids) | review_named("split/hu-hana")(ids),
        reads=SPLIT_READS,
    ),
    Scenario(
        "reviews/rationale/edit",
        sql("UPDATE reviews SET rationale = 'forged' WHERE review_id = ?", rev(HUGO)),
        named=review_named(HUGO),
        reads=SPLIT_READS,
    ),
    Scenario(
        # Pointing hugo's review at hana's would make hers superseded, so it stops counting.
        "reviews/supersedes/edit",
        sql(
            "UPDATE reviews SET supersedes = ? WHERE review_id = ?",
            rev("split/hu-hana"),
            rev(HUGO),
        ),
        named=review_named(HUGO),
        reads=SPLIT_READS,
    ),
    Scenario(
        # The amendment gone, the first answer would count again: the ledger still has it.
        "reviews/amendment/delete",
        sql("DELETE FROM reviews WHERE review_id = ?", rev("amended/hu-hana/amend")),
        named=review_named("amended/hu-hana/amend"),
    ),
    Scenario(
        "reviews/label/rewrite",
        then_reforge(
            sql("UPDATE reviews SET label_key = '\"key\"' WHERE review_id = ?", rev(HUGO))
        ),
        rewritten=True,
        verdict=False,
    ),
    # resolutions
    Scenario(
        "resolutions/rationale/edit",
        sql("UPDATE resolutions SET rationale = 'forged' WHERE case_id = ?", case("split")),
        named=resolution_named("split", 1),
        reads=SPLIT_READS,
    ),
    Scenario(
        "resolutions/identity/edit",
        sql(
            "UPDATE resolutions SET adjudicator_reviewer_id = 'hu-hana' WHERE case_id = ?",
            case("split"),
        ),
        named=resolution_named("split", 1),
        reads=SPLIT_READS,
    ),
    Scenario(
        "resolutions/label/edit",
        sql("UPDATE resolutions SET label_key = '\"none\"' WHERE case_id = ?", case("split")),
        named=resolution_named("split", 1),
        reads=SPLIT_READS,
    ),
    Scenario(
        "resolutions/basis/edit",
        sql(
            "UPDATE resolutions SET basis = 'ADJUDICATOR_DECISION' WHERE case_id = ? AND round = 1",
            case("agree"),
        ),
        named=resolution_named("agree", 1),
        reads=(("GetCase", "agree"), ("GetCaseState", "agree")),
    ),
    Scenario(
        "resolutions/time/edit",
        sql(
            f"UPDATE resolutions SET resolve_time = resolve_time {NOW_PLUS} WHERE case_id = ?",
            case("split"),
        ),
        named=resolution_named("split", 1),
        reads=SPLIT_READS,
    ),
    Scenario(
        "resolutions/row/delete",
        sql("DELETE FROM resolutions WHERE case_id = ?", case("split")),
        named=resolution_named("split", 1),
    ),
    Scenario(
        "resolutions/row/insert",
        forged_copy(
            "resolutions",
            "case_id = ?",
            case("split"),
            case_id=case("open"),
            basis="UNANIMOUS_AGREEMENT",
            adjudicator_reviewer_id="",
            review_ids=lambda ids: f'["{ids.reviews["open/fx-ann"]}"]',
        ),
        named=resolution_named("open", 1),
        reads=OPEN_READS,
    ),
    Scenario(
        "resolutions/row/reorder",
        renumber_resolutions,
        named=lambda ids: resolution_named("agree", 1)(ids) | resolution_named("agree", 2)(ids),
        reads=(("GetCase", "agree"), ("GetCaseState", "agree")),
    ),
    Scenario(
        "resolutions/label/rewrite",
        then_reforge(
            sql("UPDATE resolutions SET label_key = '\"none\"' WHERE case_id = ?", case("split")),
            sql("UPDATE gold_labels SET label_key = '\"none\"' WHERE case_id = ?", case("split")),
        ),
        rewritten=True,
        verdict=False,
    ),
    # gold labels
    Scenario(
        "gold_labels/identity/edit",
        sql("UPDATE gold_labels SET case_id = ? WHERE case_id = ?", case("open"), case("split")),
        named=lambda ids: gold_named("open", 1)(ids) | gold_named("split", 1)(ids),
        reads=(
            ("ListGoldLabelRevisions", "open"),
            ("ListGoldLabelRevisions", ""),
            ("ExportCorpus", ""),
        ),
    ),
    Scenario(
        "gold_labels/label/edit",
        sql("UPDATE gold_labels SET label_key = '\"none\"' WHERE case_id = ?", case("split")),
        named=gold_named("split", 1),
        reads=(("ListGoldLabelRevisions", "split"), ("ExportCorpus", "")),
    ),
    Scenario(
        "gold_labels/provenance/edit",
        sql(
            "UPDATE gold_labels SET provenance = 'HUMAN_ADJUDICATED' "
            "WHERE case_id = ? AND revision = 2",
            case("agree"),
        ),
        named=gold_named("agree", 2),
        reads=(("ListGoldLabelRevisions", "agree"), ("ExportCorpus", "")),
    ),
    Scenario(
        "gold_labels/time/edit",
        sql(
            "UPDATE gold_labels SET freeze_time = '2001-01-01T00:00:00.000000Z' WHERE case_id = ?",
            case("split"),
        ),
        named=gold_named("split", 1),
        reads=(("ListGoldLabelRevisions", "split"), ("ExportCorpus", "")),
    ),
    Scenario(
        "gold_labels/row/delete",
        sql("DELETE FROM gold_labels WHERE case_id = ?", case("split")),
        named=gold_named("split", 1),
    ),
    Scenario(
        "gold_labels/row/insert",
        forged_gold,
        named=gold_named("open", 1),
        reads=(
            ("ListGoldLabelRevisions", "open"),
            ("ListGoldLabelRevisions", ""),
            ("ExportCorpus", ""),
        ),
    ),
    Scenario(
        "gold_labels/row/reorder",
        renumber_gold,
        named=lambda ids: gold_named("agree", 1)(ids) | gold_named("agree", 2)(ids),
        reads=(("ListGoldLabelRevisions", "agree"), ("ExportCorpus", "")),
    ),
    Scenario(
        "gold_labels/provenance/rewrite",
        then_reforge(
            sql(
                "UPDATE gold_labels SET provenance = 'HUMAN_ADJUDICATED' "
                "WHERE case_id = ? AND revision = 2",
                case("agree"),
            )
        ),
        rewritten=True,
        verdict=False,
    ),
    # approvals (tamper_approvals: consumed, pending, denied, table)
    Scenario(
        "approvals/identity/edit",
        sql(
            "UPDATE approvals SET approval_id = 'approval-forged' WHERE approval_id = ?",
            approval("pending"),
        ),
        named=approvals_named("approval-forged", "pending"),
        reads=(("GetApproval", "approval-forged"), APPROVAL_LIST),
    ),
    Scenario(
        "approvals/requester/edit",
        sql(
            "UPDATE approvals SET requester_subject = 'mallory' WHERE approval_id = ?",
            approval("consumed"),
        ),
        named=approvals_named("consumed"),
        reads=(("GetApproval", "consumed"), APPROVAL_LIST),
    ),
    Scenario(
        "approvals/tenant/edit",
        sql("UPDATE approvals SET tenant = 'tenant-a' WHERE approval_id = ?", approval("denied")),
        named=approvals_named("denied"),
        reads=DENIED_READS,
    ),
    Scenario(
        "approvals/candidate/edit",
        sql(
            f"UPDATE approvals SET candidate_digest = '{FORGED_DIGEST}' WHERE approval_id = ?",
            approval("pending"),
        ),
        named=approvals_named("pending"),
        reads=PENDING_READS,
    ),
    Scenario(
        "approvals/content/edit",
        sql("UPDATE approvals SET reason = 'forged' WHERE approval_id = ?", approval("denied")),
        named=approvals_named("denied"),
        reads=DENIED_READS,
    ),
    Scenario(
        "approvals/table_change/edit",
        sql(
            "UPDATE approvals SET candidate_detail = "
            "replace(candidate_detail, '\"ci_status\":0.7', '\"ci_status\":0.95') "
            "WHERE approval_id = ?",
            approval("table"),
        ),
        named=approvals_named("table"),
        reads=(("GetApproval", "table"), APPROVAL_LIST),
        writes=(("ConsumeApproval", "table"),),
    ),
    Scenario(
        "approvals/quorum/edit",
        sql("UPDATE approvals SET quorum = 1 WHERE approval_id = ?", approval("pending")),
        named=approvals_named("pending"),
        reads=PENDING_READS,
        writes=(("ConsumeApproval", "pending"),),
    ),
    Scenario(
        "approvals/deny_ends/edit",
        sql("UPDATE approvals SET deny_ends = 0 WHERE approval_id = ?", approval("denied")),
        named=approvals_named("denied"),
        reads=DENIED_READS,
        writes=(("DecideApproval", "denied"),),
    ),
    Scenario(
        "approvals/time/edit",
        sql(
            f"UPDATE approvals SET expire_time = expire_time {NOW_PLUS} WHERE approval_id = ?",
            approval("pending"),
        ),
        named=approvals_named("pending"),
        reads=PENDING_READS,
    ),
    Scenario(
        "approvals/row/delete",
        delete_approval("denied"),
        named=lambda ids: approvals_named("denied")(ids) | steps_named("denied#1")(ids),
        gone=(("GetApproval", "denied"),),
    ),
    Scenario(
        "approvals/row/insert",
        forged_copy(
            "approvals", "approval_id = ?", approval("pending"), approval_id="approval-forged"
        ),
        named=approvals_named("approval-forged"),
        reads=(("GetApproval", "approval-forged"), APPROVAL_LIST),
    ),
    Scenario(
        "approvals/row/reorder",
        swap_approvals,
        named=approvals_named("pending", "denied"),
        reads=(("GetApproval", "pending"), ("GetApproval", "denied"), APPROVAL_LIST),
    ),
    Scenario(
        "approvals/quorum/rewrite",
        then_reforge(
            sql("UPDATE approvals SET quorum = 1 WHERE approval_id = ?", approval("pending"))
        ),
        rewritten=True,
        verdict=False,
    ),
    # approval steps
    Scenario(
        "approval_steps/identity/edit",
        sql(
            f"UPDATE approval_steps SET approval_id = ?, seq = 2 WHERE approval_id = ? AND {FIRST}",
            approval("pending"),
            approval("consumed"),
        ),
        named=steps_named("pending#2", "consumed#1"),
        reads=(*PENDING_READS, ("GetApproval", "consumed")),
    ),
    Scenario(
        "approval_steps/kind/edit",
        sql(
            f"UPDATE approval_steps SET kind = 'APPROVED' WHERE approval_id = ? AND {FIRST}",
            approval("denied"),
        ),
        named=steps_named("denied#1"),
        reads=DENIED_READS,
        writes=(("ConsumeApproval", "denied"),),
    ),
    Scenario(
        "approval_steps/actor/edit",
        sql(
            f"UPDATE approval_steps SET actor_subject = '{REQUESTER}' "
            f"WHERE approval_id = ? AND {FIRST}",
            approval("pending"),
        ),
        named=steps_named("pending#1"),
        reads=PENDING_READS,
    ),
    Scenario(
        "approval_steps/content/edit",
        sql(
            f"UPDATE approval_steps SET reason = 'forged' WHERE approval_id = ? AND {FIRST}",
            approval("denied"),
        ),
        named=steps_named("denied#1"),
        reads=DENIED_READS,
    ),
    Scenario(
        "approval_steps/candidate/edit",
        sql(
            f"UPDATE approval_steps SET candidate_digest = '{FORGED_DIGEST}' "
            "WHERE approval_id = ? AND seq = 3",
            approval("consumed"),
        ),
        named=steps_named("consumed#3"),
        reads=CONSUMED_READS,
    ),
    Scenario(
        "approval_steps/time/edit",
        sql(
            f"UPDATE approval_steps SET occur_time = occur_time {NOW_PLUS} "
            "WHERE approval_id = ? AND seq = 2",
            approval("consumed"),
        ),
        named=steps_named("consumed#2"),
        reads=CONSUMED_READS,
    ),
    Scenario(
        "approval_steps/row/delete",
        sql("DELETE FROM approval_steps WHERE approval_id = ?", approval("denied")),
        named=steps_named("denied#1"),
        gone=DENIED_READS,
        writes=(("DecideApproval", "denied"),),
    ),
    Scenario(
        "approval_steps/tail/delete",
        sql("DELETE FROM approval_steps WHERE approval_id = ? AND seq = 3", approval("consumed")),
        named=steps_named("consumed#3"),
        gone=CONSUMED_READS,
        writes=(("ConsumeApproval", "consumed"),),
    ),
    Scenario(
        "approval_steps/row/insert",
        forged_copy(
            "approval_steps",
            f"approval_id = ? AND {FIRST}",
            approval("consumed"),
            approval_id=approval("pending"),
            seq=2,
        ),
        named=steps_named("pending#2"),
        reads=PENDING_READS,
        writes=(("ConsumeApproval", "pending"),),
    ),
    Scenario(
        "approval_steps/row/reorder",
        renumber_steps,
        named=steps_named("consumed#2", "consumed#3"),
        reads=CONSUMED_READS,
    ),
    Scenario(
        "approval_steps/kind/rewrite",
        then_reforge(denial_made_grant),
        rewritten=True,
        verdict=False,
    ),
    # case assignments (the "assigned" case: hana and hugo in change 1, hugo out in 2)
    Scenario(
        "case_assignments/identity/edit",
        sql(
            f"UPDATE case_assignments SET reviewer_id = 'hu-ada' WHERE case_id = ? AND {HANA_1}",
            case("assigned"),
        ),
        named=assignments_named("assigned#1"),
        reads=(*ASSIGNED_READS, ("ListQueue", "hu-ada")),
    ),
    Scenario(
        "case_assignments/action/edit",
        sql(
            f"UPDATE case_assignments SET action = 'REMOVE' WHERE case_id = ? AND {HANA_1}",
            case("assigned"),
        ),
        named=assignments_named("assigned#1"),
        reads=ASSIGNED_READS,
        writes=(("SubmitReview", "assigned"),),
    ),
    Scenario(
        "case_assignments/tenant/edit",
        sql(
            f"UPDATE case_assignments SET tenant = 'tenant-b' WHERE case_id = ? AND {HANA_1}",
            case("assigned"),
        ),
        named=assignments_named("assigned#1"),
        reads=ASSIGNED_READS,
    ),
    Scenario(
        # A forged change giving the case to ada: it has no event.
        "case_assignments/row/insert",
        forged_copy(
            "case_assignments",
            f"case_id = ? AND {HANA_1}",
            case("assigned"),
            change=3,
            reviewer_id="hu-ada",
        ),
        named=assignments_named("assigned#3"),
        reads=(*ASSIGNED_READS, ("ListQueue", "hu-ada")),
    ),
    Scenario(
        # Hugo's removal gone, he would look assigned again: the ledger still has it.
        "case_assignments/row/delete",
        sql("DELETE FROM case_assignments WHERE case_id = ? AND change = 2", case("assigned")),
        named=assignments_named("assigned#2"),
        reads=(("GetCase", "assigned"), ("ListQueue", "hu-hugo"), ("ListCases", "")),
        writes=(("SubmitReview", "assigned"),),
    ),
    Scenario(
        "case_assignments/row/move",
        sql(
            "UPDATE case_assignments SET case_id = ? WHERE case_id = ? AND change = 2",
            case("open"),
            case("assigned"),
        ),
        named=assignments_named("assigned#2", "open#2"),
        reads=(("GetCase", "assigned"), ("GetCase", "open"), ("ListCases", "")),
        writes=(("SubmitReview", "assigned"),),
    ),
    # the audit ledger
    Scenario(
        "audit_events/identity/edit",
        edit_payload(HUGO_EVENT, "reviewer_id", "hu-ada"),
        sequence=HUGO_EVENT,
        reads=(("ListAuditEvents", ""), *SPLIT_READS),
    ),
    Scenario(
        "audit_events/label/edit",
        edit_payload(HUGO_EVENT, "answer", "sha256:" + "ab" * 32),
        sequence=HUGO_EVENT,
        reads=(("ListAuditEvents", ""), *SPLIT_READS),
    ),
    Scenario(
        "audit_events/kind/edit",
        edit_payload(event_at("REVIEWER_REGISTERED", reviewer_id="fx-bob"), "kind", "HUMAN"),
        sequence=event_at("REVIEWER_REGISTERED", reviewer_id="fx-bob"),
        reads=(("ListAuditEvents", ""), ("GetReviewer", "fx-bob"), ("ListReviewers", "")),
    ),
    Scenario(
        "audit_events/time/edit",
        sql(
            "UPDATE audit_events SET occur_time = '2001-01-01T00:00:00.000000Z' WHERE sequence = 2"
        ),
        sequence=lambda db, ids: 2,
        reads=(("ListAuditEvents", ""),),
    ),
    Scenario(
        "audit_events/row/delete",
        delete_event(event_at("CASE_RESOLVED", case_id=case("split"))),
        sequence=next_after(event_at("CASE_RESOLVED", case_id=case("split"))),
        reads=(("ListAuditEvents", ""), *SPLIT_READS),
        rewritten=True,
    ),
    Scenario(
        "audit_events/tail/delete",
        delete_event(last_event),
        named=gold_named("other", 1),
        reads=(("ListGoldLabelRevisions", "other"), ("ExportCorpus", "")),
        rewritten=True,
    ),
    Scenario(
        "audit_events/row/insert",
        append_copy_of_last,
        sequence=lambda db, ids: last_event(db, ids) + 1,
        reads=(("ListAuditEvents", ""),),
    ),
    Scenario(
        "audit_events/row/reorder",
        swap_events(2, 3),
        sequence=lambda db, ids: 2,
        reads=(("ListAuditEvents", ""),),
        rewritten=True,
    ),
    Scenario(
        "audit_events/row/rewrite",
        then_reforge(delete_event_and_record),
        rewritten=True,
        verdict=False,
    ),
)


# --- running a scenario once, checking it per read -------------------------------------


@dataclass
class Seen:
    verdict: pb.VerifyAuditChainResponse
    codes: dict[str, grpc.StatusCode]
    extends: bool
    expected_sequence: int


class Matrix:
    """The pristine database (built on first use) and each scenario's outcome, computed
    once: one server per scenario serves every check of it."""

    def __init__(self, db: str, root: Path) -> None:
        self.db = db
        self.root = root
        self.pristine: Pristine | None = None
        self.seen: dict[str, Seen] = {}

    async def base(self) -> Pristine:
        if self.pristine is None:
            self.pristine = await build(self.db, self.root / "ledger-key.pem")
        return self.pristine

    @asynccontextmanager
    async def copy(self, name: str) -> AsyncIterator[str]:
        """A private copy of the pristine database, dropped (PostgreSQL) when done."""
        pristine = await self.base()
        directory = self.root / name.replace("/", "-")
        directory.mkdir(exist_ok=True)
        copies = Copies()
        try:
            yield copies.copy(pristine.db, directory)
        finally:
            copies.close()

    async def outcome(self, scenario: Scenario) -> Seen:
        if scenario.id in self.seen:
            return self.seen[scenario.id]
        pristine = await self.base()
        expected = 0
        async with self.copy(scenario.id) as db:
            with tampering(db) as raw:
                if scenario.sequence is not None:
                    expected = scenario.sequence(raw, pristine.ids)
                scenario.tamper(raw, pristine.ids)
            async with serve(db, pristine.key) as served:
                stub = served.stub
                verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest(), timeout=TIMEOUT)
                codes = {
                    label(read): await status_of(call(served, pristine.ids, read))
                    for read in (*scenario.reads, *scenario.gone)
                }
                for write in scenario.writes:
                    code = await status_of(call(served, pristine.ids, write))
                    codes[f"write {label(write)}"] = code
                extends = await extends_checkpoint(stub, pristine)
        self.seen[scenario.id] = Seen(verdict, codes, extends, expected)
        return self.seen[scenario.id]


@pytest.fixture(scope="module")
def matrix(module_db: str, tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    """The matrix on one engine's pristine database (``module_db``: each engine in turn)."""
    return Matrix(module_db, tmp_path_factory.mktemp("tamper"))


# Checks known not to hold yet, by "<scenario> <check>" -> why: each is xfail(strict=True),
# so fixing one turns its test red until it is taken off this list. None today: every
# column is committed by its event (times and attested_by by events written since they
# were added), a missing row is reported unless a deletion by the service accounts for it,
# GetCaseState and ListQueue check the rows they derive their answer from, approval reads
# and changes check every step the ledger recorded for the approval (a step taken out is
# DATA_LOSS, not an approval that looks unused again), and ListAuditEvents re-checks each
# event's hash, link and transparency-log leaf.
GAPS: dict[str, str] = {}


def _checks() -> list[Any]:
    params = []
    for scenario in SCENARIOS:
        checks = ["verdict"] if scenario.verdict else []
        checks += [label(r) for r in scenario.reads]
        checks += [f"gone {label(r)}" for r in scenario.gone]
        checks += [f"write {label(w)}" for w in scenario.writes]
        checks += ["checkpoint"] if scenario.rewritten else []
        checks += ["self-consistent"] if not scenario.verdict else []
        for check in checks:
            key = f"{scenario.id} {check}"
            marks = [pytest.mark.xfail(strict=True, reason=GAPS[key])] if key in GAPS else []
            params.append(pytest.param(scenario, check, id=key.replace(" ", ":"), marks=marks))
    return params


class TestTamperMatrix:
    @pytest.mark.parametrize(("scenario", "check"), _checks())
    async def test_detected(self, matrix: Matrix, scenario: Scenario, check: str) -> None:
        """The tampering is seen by this check."""
        seen = await matrix.outcome(scenario)
        verdict = seen.verdict
        if check == "verdict":
            assert not verdict.ok, "VerifyAuditChain says ok"
            if scenario.named is not None:
                ids = (await matrix.base()).ids
                named = (verdict.bad_record_kind, verdict.bad_record_id)
                assert named in scenario.named(ids), (named, verdict.detail)
            if scenario.sequence is not None:
                assert verdict.first_bad_sequence == seen.expected_sequence, verdict.detail
        elif check == "self-consistent":
            # The forger is competent: the server itself finds nothing, so the checkpoint
            # check above is what catches the rewrite (and is not passing by accident).
            assert verdict.ok, verdict.detail
        elif check == "checkpoint":
            assert not seen.extends, "the log still extends the checkpoint saved before"
        elif check.startswith("gone "):
            code = seen.codes[check.removeprefix("gone ")]
            assert code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.DATA_LOSS), code
        else:
            assert seen.codes[check] == grpc.StatusCode.DATA_LOSS, seen.codes[check]


EVERY_READ = sorted({r for s in SCENARIOS for r in (*s.reads, *s.gone)})


class TestControls:
    async def test_an_untouched_copy_passes_every_check(self, matrix: Matrix) -> None:
        """The pristine copy verifies, every read of the matrix succeeds, and the log
        extends the saved checkpoint."""
        pristine = await matrix.base()
        async with matrix.copy("control-untouched") as db, serve(db, pristine.key) as served:
            with tampering(db):  # guards off and back on, nothing else
                pass
            verdict = await served.stub.VerifyAuditChain(pb.VerifyAuditChainRequest())
            assert verdict.ok, verdict.detail
            assert verdict.events_checked == pristine.events
            for read in EVERY_READ:
                code = await status_of(call(served, pristine.ids, read))
                expected = (
                    grpc.StatusCode.NOT_FOUND
                    if "forged" in read[1] or read[1] in ("fx-eve", "hu-eve")
                    else grpc.StatusCode.OK
                )
                assert code == expected, (read, code)
            assert await extends_checkpoint(served.stub, pristine)

    async def test_a_tenant_deletion_by_the_service_is_not_tampering(self, matrix: Matrix) -> None:
        """DeleteTenantRecords removes tenant-b's case, reviews and resolution: nothing is
        flagged, its gold label and its approval still read, and the log extends the saved
        checkpoint."""
        pristine = await matrix.base()
        async with matrix.copy("control-tenant-deletion") as db, serve(db, pristine.key) as served:
            stub = served.stub
            await stub.DeleteTenantRecords(
                pb.DeleteTenantRecordsRequest(request_id=rid(), tenant="tenant-b"),
                timeout=TIMEOUT,
            )
            verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest())
            assert verdict.ok, verdict.detail
            other = pristine.ids.cases["other"]
            assert await status_of(stub.GetCase(pb.GetCaseRequest(case_id=other))) == (
                grpc.StatusCode.NOT_FOUND
            )
            labels = await stub.ListGoldLabelRevisions(
                pb.ListGoldLabelRevisionsRequest(case_id=other)
            )
            assert [r.revision for r in labels.revisions] == [1]
            assert await status_of(stub.ExportCorpus(pb.ExportCorpusRequest())) == (
                grpc.StatusCode.OK
            )
            for read in DENIED_READS:
                code = await status_of(call(served, pristine.ids, read))
                assert code == grpc.StatusCode.OK, (read, code)
            assert await extends_checkpoint(stub, pristine)


class TestLogLeaves:
    async def test_an_event_rehashed_after_the_log_took_it_is_refused(self, matrix: Matrix) -> None:
        """The last event edited while the server runs, its hash recomputed (so its content,
        hash and link agree in the file): ListAuditEvents still fails with DATA_LOSS naming
        it, because the transparency log's leaf for it is the hash it had."""
        pristine = await matrix.base()
        async with matrix.copy("log-leaves") as db, serve(db, pristine.key) as served:
            stub = served.stub
            await stub.GetCheckpoint(pb.GetCheckpointRequest(), timeout=TIMEOUT)
            listed = pb.ListAuditEventsRequest(page_size=1000)
            assert await status_of(stub.ListAuditEvents(listed, timeout=TIMEOUT)) == (
                grpc.StatusCode.OK
            )
            with tampering(db) as raw:
                last = ledger_rows.audit_event(
                    raw.one(
                        f"SELECT {ledger_rows.AUDIT_COLUMNS} FROM audit_events "
                        "ORDER BY sequence DESC LIMIT 1"
                    )
                )
                payload = {**last.payload, "provenance": "HUMAN_ADJUDICATED"}
                rehashed = ledger.event_hash(
                    last.sequence,
                    last.event_type,
                    last.occur_time,
                    payload,
                    last.previous_hash,
                    last.actor,
                )
                done = raw.execute(
                    "UPDATE audit_events SET payload = ?, hash = ? WHERE sequence = ?",
                    canonical_json(payload),
                    rehashed,
                    last.sequence,
                )
                assert done == 1
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.ListAuditEvents(listed, timeout=TIMEOUT)
            assert caught.value.code() == grpc.StatusCode.DATA_LOSS
            assert f"audit event {last.sequence} " in str(caught.value.details())


class TestAuditorsCommand:
    async def test_verify_since_refuses_a_rewritten_ledger(
        self, matrix: Matrix, tmp_path: Path
    ) -> None:
        """`assay audit verify --since` with the checkpoint saved before a full rewrite
        (gold provenance upgraded, every digest and the chain recomputed) exits 2 in one
        line; the same command against an untouched copy exits 0."""
        pristine = await matrix.base()
        saved = tmp_path / "saved.checkpoint"
        saved.write_text(pristine.note, encoding="utf-8")
        forged = next(s for s in SCENARIOS if s.id == "gold_labels/provenance/rewrite")
        results: dict[str, tuple[int | None, str]] = {}
        for name, tamper in (("untouched", None), ("rewritten", forged.tamper)):
            async with matrix.copy(f"cli-{name}") as db:
                with tampering(db) as raw:
                    if tamper is not None:
                        tamper(raw, pristine.ids)
                async with serve(db, pristine.key) as served:
                    proc = await asyncio.create_subprocess_exec(
                        *assay_command(
                            "audit", "verify", "--since", str(saved), "--target", served.target
                        ),
                        stdout=asyncio.subprocess.PIPE,
                        stderr=asyncio.subprocess.PIPE,
                    )
                    _, stderr = await asyncio.wait_for(proc.communicate(), timeout=60)
                    results[name] = (proc.returncode, stderr.decode())
        assert results["untouched"][0] == 0, results["untouched"]
        code, err = results["rewritten"]
        assert code == 3, results["rewritten"]  # exit 3: a failed verification
        assert "Traceback" not in err
        assert "rewritten" in err

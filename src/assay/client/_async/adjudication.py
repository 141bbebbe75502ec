"""Adjudication's client: every RPC, plus the review workflow in plain values.

``AsyncAdjudicationClient``; ``AdjudicationClient`` is generated from it, the same
methods not awaited. The workflow, in the order a case lives it: ``add_reviewer`` ->
``enqueue`` -> ``review`` / ``decline`` (one per reviewer per round) -> ``adjudicate`` or
``resolve_unanimous`` -> ``freeze`` -> ``latest_gold_label`` / ``export``.
Mutating calls get a fresh ``request_id`` when the request has none, so the
channel's automatic retry of UNAVAILABLE never acts twice; pass your own
``request_id`` in the request message to make a retry across processes safe.
"""

# `timeout` here is the gRPC deadline sent with the call (the server sees it), not a
# local wait that asyncio.timeout could replace.
# ruff: noqa: ASYNC109

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Unpack

from assay.client import assignment_builders, builders, listing_builders
from assay.client._async.base import AsyncClient, follow_pages, unary, unary_default_request
from assay.client.export import ExportItem, ExportTracker
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import gold_pb2

SERVICE = adj.DESCRIPTOR.services_by_name["AdjudicationService"]


class AsyncAdjudicationClient(AsyncClient):
    """Asyncio client for ``assay.v1.AdjudicationService``."""

    SERVICE = SERVICE

    # The RPCs, by what they work on.

    # Reviewers.
    register_reviewer = unary(adj.RegisterReviewerRequest, adj.RegisterReviewerResponse)
    get_reviewer = unary(adj.GetReviewerRequest, adj.GetReviewerResponse)
    list_reviewers = unary_default_request(adj.ListReviewersRequest, adj.ListReviewersResponse)

    # Cases: enqueued, read (whole, or blinded as a reviewer sees them), listed, their state.
    enqueue_case = unary(adj.EnqueueCaseRequest, adj.EnqueueCaseResponse)
    enqueue_cases = unary(adj.EnqueueCasesRequest, adj.EnqueueCasesResponse)
    get_case = unary(adj.GetCaseRequest, adj.GetCaseResponse)
    get_blinded_case = unary(adj.GetBlindedCaseRequest, adj.GetBlindedCaseResponse)
    list_cases = unary_default_request(adj.ListCasesRequest, adj.ListCasesResponse)
    get_case_state = unary(adj.GetCaseStateRequest, adj.GetCaseStateResponse)

    # Reviews: a reviewer's queue and reviews; an adjudicator's worklist and resolutions.
    list_queue = unary(adj.ListQueueRequest, adj.ListQueueResponse)
    submit_review = unary(adj.SubmitReviewRequest, adj.SubmitReviewResponse)
    amend_review = unary(adj.AmendReviewRequest, adj.AmendReviewResponse)
    withdraw_review = unary(adj.WithdrawReviewRequest, adj.WithdrawReviewResponse)
    list_adjudication_queue = unary(
        adj.ListAdjudicationQueueRequest, adj.ListAdjudicationQueueResponse
    )
    resolve_case = unary(adj.ResolveCaseRequest, adj.ResolveCaseResponse)

    # Assignment.
    assign_cases = unary(adj.AssignCasesRequest, adj.AssignCasesResponse)
    unassign_case = unary(adj.UnassignCaseRequest, adj.UnassignCaseResponse)

    # Gold labels: frozen, listed, exported with the corpus.
    freeze_gold_label = unary(adj.FreezeGoldLabelRequest, adj.FreezeGoldLabelResponse)
    list_gold_label_revisions = unary_default_request(
        adj.ListGoldLabelRevisionsRequest, adj.ListGoldLabelRevisionsResponse
    )

    def export_corpus(
        self,
        request: adj.ExportCorpusRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> AsyncIterator[adj.ExportCorpusResponse]:
        return self._stream(
            "ExportCorpus",
            request or adj.ExportCorpusRequest(),
            adj.ExportCorpusResponse,
            timeout,
            x_request_id,
        )

    # Agreement between reviewers, and the sources' reliability against gold labels.
    compute_agreement = unary_default_request(
        adj.ComputeAgreementRequest, adj.ComputeAgreementResponse
    )
    calibrate_reliability = unary(adj.CalibrateReliabilityRequest, adj.CalibrateReliabilityResponse)

    # The audit ledger: its chain verified, its events listed, its transparency-log proofs.
    verify_audit_chain = unary_default_request(
        adj.VerifyAuditChainRequest, adj.VerifyAuditChainResponse
    )
    list_audit_events = unary_default_request(
        adj.ListAuditEventsRequest, adj.ListAuditEventsResponse
    )
    get_checkpoint = unary_default_request(adj.GetCheckpointRequest, adj.GetCheckpointResponse)
    get_inclusion_proof = unary(adj.GetInclusionProofRequest, adj.GetInclusionProofResponse)
    get_consistency_proof = unary(adj.GetConsistencyProofRequest, adj.GetConsistencyProofResponse)

    # Operations: the data lifecycle.
    delete_tenant_records = unary(adj.DeleteTenantRecordsRequest, adj.DeleteTenantRecordsResponse)
    sweep_expired_records = unary_default_request(
        adj.SweepExpiredRecordsRequest, adj.SweepExpiredRecordsResponse
    )

    # Workflow convenience.

    async def add_reviewer(
        self,
        reviewer_id: str,
        kind: int | str,
        attested_by: str = "",
        *,
        timeout: float | None = None,
    ) -> adj.Reviewer:
        """Register a reviewer (``HUMAN`` needs ``attested_by``; or ``MECHANISM_TEST_FIXTURE``)."""
        request = builders.register_reviewer_request(reviewer_id, kind, attested_by)
        response = await self.register_reviewer(request, timeout=timeout)
        return response.reviewer

    async def enqueue(
        self,
        *,
        request_id: str = "",
        timeout: float | None = None,
        **case: Unpack[builders.NewCase],
    ) -> adj.Case:
        """Enqueue a case; ``local_verdict`` is stored hidden from reviewers. The case's
        keywords are ``builders.NewCase``'s (``tenant``, ``subject``, ``predicate``,
        ``candidate_values``, ``local_verdict``, then the optional ones)."""
        request = builders.enqueue_case_request(**case)
        request.request_id = request_id
        response = await self.enqueue_case(request, timeout=timeout)
        return response.case

    async def review(
        self,
        case_id: str,
        reviewer_id: str,
        label: Any,
        *,
        round: int = 0,
        rationale: str = "",
        timeout: float | None = None,
    ) -> adj.SubmitReviewResponse:
        """Submit a review choosing ``label``, with an optional note for the adjudicator."""
        request = builders.label_review_request(case_id, reviewer_id, label, round, rationale)
        return await self.submit_review(request, timeout=timeout)

    async def amend(
        self,
        review_id: str,
        label: Any,
        *,
        rationale: str = "",
        timeout: float | None = None,
    ) -> adj.AmendReviewResponse:
        """Replace your latest review of an undecided round by one choosing ``label``."""
        request = adj.AmendReviewRequest(
            review_id=review_id,
            outcome=adj.REVIEW_OUTCOME_LABEL,
            label=builders.to_value(label),
            rationale=rationale,
        )
        return await self.amend_review(request, timeout=timeout)

    async def withdraw(
        self, review_id: str, *, reason: str = "", timeout: float | None = None
    ) -> adj.WithdrawReviewResponse:
        """Withdraw your latest review of an undecided round (the case returns to your
        queue)."""
        request = adj.WithdrawReviewRequest(review_id=review_id, reason=reason)
        return await self.withdraw_review(request, timeout=timeout)

    async def decline(
        self,
        case_id: str,
        reviewer_id: str,
        reason: str,
        *,
        not_evaluable: bool = False,
        round: int = 0,
        timeout: float | None = None,
    ) -> adj.SubmitReviewResponse:
        """Submit a review without a label: unresolved (or not evaluable), with ``reason``."""
        request = builders.no_label_review_request(
            case_id, reviewer_id, reason, not_evaluable, round
        )
        return await self.submit_review(request, timeout=timeout)

    async def adjudicate(
        self,
        case_id: str,
        adjudicator_id: str,
        label: Any,
        *,
        rationale: str = "",
        timeout: float | None = None,
    ) -> adj.ResolveCaseResponse:
        """Resolve a disagreement: the adjudicator (not a reviewer of the round) chooses, and
        may say why."""
        return await self.resolve_case(
            builders.adjudicate_request(case_id, adjudicator_id, label, rationale),
            timeout=timeout,
        )

    async def resolve_unanimous(
        self, case_id: str, *, timeout: float | None = None
    ) -> adj.ResolveCaseResponse:
        """Resolve a round on which the reviewers agree."""
        return await self.resolve_case(builders.unanimous_request(case_id), timeout=timeout)

    async def freeze(
        self, case_id: str, *, expected_revision: int = 0, timeout: float | None = None
    ) -> gold_pb2.GoldLabelRevision:
        """Freeze the resolved round into the next gold-label revision."""
        request = adj.FreezeGoldLabelRequest(case_id=case_id, expected_revision=expected_revision)
        response = await self.freeze_gold_label(request, timeout=timeout)
        return response.revision

    async def assign(
        self,
        case_ids: Sequence[str],
        reviewer_ids: Sequence[str],
        *,
        rule: str | int = "each",
        per_case: int = 0,
        timeout: float | None = None,
    ) -> list[adj.CaseAssignment]:
        """Assign cases (operators): every reviewer to every case (``"each"``), or
        ``per_case`` of them per case in turn (``"round-robin"``) or to the least loaded
        (``"least-loaded"``; 0: each case's required reviews). Each case's assignment after."""
        request = assignment_builders.assign_request(case_ids, reviewer_ids, rule, per_case)
        response = await self.assign_cases(request, timeout=timeout)
        return list(response.assignments)

    async def unassign(
        self,
        case_id: str,
        reviewer_ids: Sequence[str],
        *,
        to: Sequence[str] = (),
        timeout: float | None = None,
    ) -> adj.CaseAssignment:
        """Take reviewers off a case, or (``to``) replace them; the assignment after."""
        request = assignment_builders.unassign_request(case_id, reviewer_ids, to)
        response = await self.unassign_case(request, timeout=timeout)
        return response.assignment

    async def gold_labels(
        self, case_id: str = "", *, timeout: float | None = None
    ) -> AsyncIterator[gold_pb2.GoldLabelRevision]:
        """Every gold-label revision (of one case, or all), following pages."""
        request = adj.ListGoldLabelRevisionsRequest(case_id=case_id)
        async for revision in follow_pages(
            self.list_gold_label_revisions, request, lambda page: page.revisions, timeout
        ):
            yield revision

    async def latest_gold_label(
        self, case_id: str, *, timeout: float | None = None
    ) -> gold_pb2.GoldLabelRevision | None:
        """The case's latest gold-label revision, or None before its first freeze."""
        latest = None
        async for revision in self.gold_labels(case_id, timeout=timeout):
            latest = revision
        return latest

    async def reviewers(self, *, timeout: float | None = None) -> AsyncIterator[adj.Reviewer]:
        """Every registered reviewer, following pages."""
        request = adj.ListReviewersRequest()
        async for reviewer in follow_pages(
            self.list_reviewers, request, lambda page: page.reviewers, timeout
        ):
            yield reviewer

    async def queue(
        self, reviewer_id: str, tenant: str = "", *, timeout: float | None = None
    ) -> AsyncIterator[adj.BlindedCase]:
        """The blinded cases ``reviewer_id`` still has to review, following pages."""
        request = adj.ListQueueRequest(reviewer_id=reviewer_id, tenant=tenant)
        async for case in follow_pages(self.list_queue, request, lambda page: page.cases, timeout):
            yield case

    async def worklist(
        self, adjudicator_id: str, tenant: str = "", *, timeout: float | None = None
    ) -> AsyncIterator[adj.AdjudicationItem]:
        """The disagreed cases ``adjudicator_id`` may decide (no verdict, with the round's
        reviews), following pages."""
        request = adj.ListAdjudicationQueueRequest(adjudicator_id=adjudicator_id, tenant=tenant)
        async for item in follow_pages(
            self.list_adjudication_queue, request, lambda page: page.items, timeout
        ):
            yield item

    async def cases(
        self, *, timeout: float | None = None, **filters: Unpack[listing_builders.CaseFilters]
    ) -> AsyncIterator[adj.CaseSummary]:
        """Every case the filters keep (``listing_builders.CaseFilters``; each a
        ``CaseSummary`` with its derived state), oldest first unless ``newest_first``,
        following pages; ``states`` by number or name (``"DISAGREED"``)."""
        request = listing_builders.list_cases_request(**filters)
        async for case in follow_pages(self.list_cases, request, lambda page: page.cases, timeout):
            yield case

    async def audit_events(
        self, *, timeout: float | None = None, **filters: Unpack[listing_builders.AuditFilters]
    ) -> AsyncIterator[adj.AuditEvent]:
        """The audit ledger in sequence order (or newest first), following pages; with
        filters (``listing_builders.AuditFilters``), only the events of those types (by
        number or name), caused by that subject, naming that case, or in that time range."""
        request = listing_builders.audit_events_request(**filters)
        async for event in follow_pages(
            self.list_audit_events, request, lambda page: page.events, timeout
        ):
            yield event

    async def export(
        self,
        tenant: str = "",
        *,
        batch_size: int = 0,
        include_reviews: bool = False,
        include_approvals: bool = False,
        timeout: float | None = None,
    ) -> AsyncIterator[ExportItem]:
        """The corpus: each ``CorpusRecord`` (with its reviews when ``include_reviews``),
        then with ``include_approvals`` each ``ExportedApproval``, then the
        ``ExportManifest``, last.

        Raises ``DataLossError`` when the stream ends without its manifest: an
        export that cannot prove it is complete is not returned as if it were.
        """
        tracker = ExportTracker()
        request = adj.ExportCorpusRequest(
            tenant=tenant,
            batch_size=batch_size,
            include_reviews=include_reviews,
            include_approvals=include_approvals,
        )
        async for message in self.export_corpus(request, timeout=timeout):
            for item in tracker.items(message):
                yield item
        tracker.finish()

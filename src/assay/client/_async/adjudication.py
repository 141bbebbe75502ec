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
from datetime import datetime
from typing import Any

from assay.client import builders
from assay.client._async.base import AsyncClient
from assay.client.export import ExportItem, ExportTracker
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import gold_pb2

SERVICE = adj.DESCRIPTOR.services_by_name["AdjudicationService"]


class AsyncAdjudicationClient(AsyncClient):
    """Asyncio client for ``assay.v1.AdjudicationService``."""

    SERVICE = SERVICE

    async def register_reviewer(
        self,
        request: adj.RegisterReviewerRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.RegisterReviewerResponse:
        return await self._unary(
            "RegisterReviewer", request, adj.RegisterReviewerResponse, timeout, x_request_id
        )

    async def get_reviewer(
        self,
        request: adj.GetReviewerRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetReviewerResponse:
        return await self._unary(
            "GetReviewer", request, adj.GetReviewerResponse, timeout, x_request_id
        )

    async def list_reviewers(
        self,
        request: adj.ListReviewersRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ListReviewersResponse:
        return await self._unary(
            "ListReviewers",
            request or adj.ListReviewersRequest(),
            adj.ListReviewersResponse,
            timeout,
            x_request_id,
        )

    async def enqueue_case(
        self,
        request: adj.EnqueueCaseRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.EnqueueCaseResponse:
        return await self._unary(
            "EnqueueCase", request, adj.EnqueueCaseResponse, timeout, x_request_id
        )

    async def enqueue_cases(
        self,
        request: adj.EnqueueCasesRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.EnqueueCasesResponse:
        return await self._unary(
            "EnqueueCases", request, adj.EnqueueCasesResponse, timeout, x_request_id
        )

    async def get_case(
        self,
        request: adj.GetCaseRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetCaseResponse:
        return await self._unary("GetCase", request, adj.GetCaseResponse, timeout, x_request_id)

    async def get_blinded_case(
        self,
        request: adj.GetBlindedCaseRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetBlindedCaseResponse:
        return await self._unary(
            "GetBlindedCase", request, adj.GetBlindedCaseResponse, timeout, x_request_id
        )

    async def list_queue(
        self,
        request: adj.ListQueueRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ListQueueResponse:
        return await self._unary("ListQueue", request, adj.ListQueueResponse, timeout, x_request_id)

    async def list_adjudication_queue(
        self,
        request: adj.ListAdjudicationQueueRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ListAdjudicationQueueResponse:
        return await self._unary(
            "ListAdjudicationQueue",
            request,
            adj.ListAdjudicationQueueResponse,
            timeout,
            x_request_id,
        )

    async def submit_review(
        self,
        request: adj.SubmitReviewRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.SubmitReviewResponse:
        return await self._unary(
            "SubmitReview", request, adj.SubmitReviewResponse, timeout, x_request_id
        )

    async def get_case_state(
        self,
        request: adj.GetCaseStateRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetCaseStateResponse:
        return await self._unary(
            "GetCaseState", request, adj.GetCaseStateResponse, timeout, x_request_id
        )

    async def resolve_case(
        self,
        request: adj.ResolveCaseRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ResolveCaseResponse:
        return await self._unary(
            "ResolveCase", request, adj.ResolveCaseResponse, timeout, x_request_id
        )

    async def freeze_gold_label(
        self,
        request: adj.FreezeGoldLabelRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.FreezeGoldLabelResponse:
        return await self._unary(
            "FreezeGoldLabel", request, adj.FreezeGoldLabelResponse, timeout, x_request_id
        )

    async def list_gold_label_revisions(
        self,
        request: adj.ListGoldLabelRevisionsRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ListGoldLabelRevisionsResponse:
        return await self._unary(
            "ListGoldLabelRevisions",
            request or adj.ListGoldLabelRevisionsRequest(),
            adj.ListGoldLabelRevisionsResponse,
            timeout,
            x_request_id,
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

    async def compute_agreement(
        self,
        request: adj.ComputeAgreementRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ComputeAgreementResponse:
        return await self._unary(
            "ComputeAgreement",
            request or adj.ComputeAgreementRequest(),
            adj.ComputeAgreementResponse,
            timeout,
            x_request_id,
        )

    async def verify_audit_chain(
        self,
        request: adj.VerifyAuditChainRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.VerifyAuditChainResponse:
        return await self._unary(
            "VerifyAuditChain",
            request or adj.VerifyAuditChainRequest(),
            adj.VerifyAuditChainResponse,
            timeout,
            x_request_id,
        )

    async def list_audit_events(
        self,
        request: adj.ListAuditEventsRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ListAuditEventsResponse:
        return await self._unary(
            "ListAuditEvents",
            request or adj.ListAuditEventsRequest(),
            adj.ListAuditEventsResponse,
            timeout,
            x_request_id,
        )

    async def get_checkpoint(
        self,
        request: adj.GetCheckpointRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetCheckpointResponse:
        return await self._unary(
            "GetCheckpoint",
            request or adj.GetCheckpointRequest(),
            adj.GetCheckpointResponse,
            timeout,
            x_request_id,
        )

    async def get_inclusion_proof(
        self,
        request: adj.GetInclusionProofRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetInclusionProofResponse:
        return await self._unary(
            "GetInclusionProof",
            request,
            adj.GetInclusionProofResponse,
            timeout,
            x_request_id,
        )

    async def get_consistency_proof(
        self,
        request: adj.GetConsistencyProofRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetConsistencyProofResponse:
        return await self._unary(
            "GetConsistencyProof",
            request,
            adj.GetConsistencyProofResponse,
            timeout,
            x_request_id,
        )

    async def delete_tenant_records(
        self,
        request: adj.DeleteTenantRecordsRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.DeleteTenantRecordsResponse:
        return await self._unary(
            "DeleteTenantRecords", request, adj.DeleteTenantRecordsResponse, timeout, x_request_id
        )

    async def sweep_expired_records(
        self,
        request: adj.SweepExpiredRecordsRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.SweepExpiredRecordsResponse:
        return await self._unary(
            "SweepExpiredRecords",
            request or adj.SweepExpiredRecordsRequest(),
            adj.SweepExpiredRecordsResponse,
            timeout,
            x_request_id,
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
        tenant: str,
        subject: str,
        predicate: str,
        candidate_values: Sequence[Any],
        local_verdict: Any,
        evidence_refs: Sequence[str] = (),
        context: str = "",
        origin: str = "client",
        origin_ref: str = "",
        expire_time: datetime | None = None,
        request_id: str = "",
        timeout: float | None = None,
    ) -> adj.Case:
        """Enqueue a case; ``local_verdict`` is stored hidden from reviewers."""
        request = builders.enqueue_case_request(
            tenant=tenant,
            subject=subject,
            predicate=predicate,
            candidate_values=candidate_values,
            local_verdict=local_verdict,
            evidence_refs=evidence_refs,
            context=context,
            origin=origin,
            origin_ref=origin_ref,
            expire_time=expire_time,
        )
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
        timeout: float | None = None,
    ) -> adj.SubmitReviewResponse:
        """Submit a review choosing ``label``."""
        request = builders.label_review_request(case_id, reviewer_id, label, round)
        return await self.submit_review(request, timeout=timeout)

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
        self, case_id: str, adjudicator_id: str, label: Any, *, timeout: float | None = None
    ) -> adj.ResolveCaseResponse:
        """Resolve a disagreement: the adjudicator (not a reviewer of the round) chooses."""
        return await self.resolve_case(
            builders.adjudicate_request(case_id, adjudicator_id, label), timeout=timeout
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

    async def gold_labels(
        self, case_id: str = "", *, timeout: float | None = None
    ) -> AsyncIterator[gold_pb2.GoldLabelRevision]:
        """Every gold-label revision (of one case, or all), following pages."""
        token = ""
        while True:
            request = adj.ListGoldLabelRevisionsRequest(case_id=case_id, page_token=token)
            page = await self.list_gold_label_revisions(request, timeout=timeout)
            for revision in page.revisions:
                yield revision
            token = page.next_page_token
            if not token:
                return

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
        token = ""
        while True:
            request = adj.ListReviewersRequest(page_token=token)
            page = await self.list_reviewers(request, timeout=timeout)
            for reviewer in page.reviewers:
                yield reviewer
            token = page.next_page_token
            if not token:
                return

    async def queue(
        self, reviewer_id: str, tenant: str = "", *, timeout: float | None = None
    ) -> AsyncIterator[adj.BlindedCase]:
        """The blinded cases ``reviewer_id`` still has to review, following pages."""
        token = ""
        while True:
            request = adj.ListQueueRequest(reviewer_id=reviewer_id, tenant=tenant, page_token=token)
            page = await self.list_queue(request, timeout=timeout)
            for case in page.cases:
                yield case
            token = page.next_page_token
            if not token:
                return

    async def worklist(
        self, adjudicator_id: str, tenant: str = "", *, timeout: float | None = None
    ) -> AsyncIterator[adj.AdjudicationItem]:
        """The disagreed cases ``adjudicator_id`` may decide (no verdict, with the round's
        reviews), following pages."""
        token = ""
        while True:
            request = adj.ListAdjudicationQueueRequest(
                adjudicator_id=adjudicator_id, tenant=tenant, page_token=token
            )
            page = await self.list_adjudication_queue(request, timeout=timeout)
            for item in page.items:
                yield item
            token = page.next_page_token
            if not token:
                return

    async def audit_events(self, *, timeout: float | None = None) -> AsyncIterator[adj.AuditEvent]:
        """The whole audit ledger in sequence order, following pages."""
        token = ""
        while True:
            request = adj.ListAuditEventsRequest(page_token=token)
            page = await self.list_audit_events(request, timeout=timeout)
            for event in page.events:
                yield event
            token = page.next_page_token
            if not token:
                return

    async def export(
        self,
        tenant: str = "",
        *,
        batch_size: int = 0,
        include_reviews: bool = False,
        timeout: float | None = None,
    ) -> AsyncIterator[ExportItem]:
        """The corpus: each ``CorpusRecord`` (with its reviews when ``include_reviews``),
        then the ``ExportManifest``, last.

        Raises ``DataLossError`` when the stream ends without its manifest: an
        export that cannot prove it is complete is not returned as if it were.
        """
        tracker = ExportTracker()
        request = adj.ExportCorpusRequest(
            tenant=tenant, batch_size=batch_size, include_reviews=include_reviews
        )
        async for message in self.export_corpus(request, timeout=timeout):
            for item in tracker.items(message):
                yield item
        tracker.finish()

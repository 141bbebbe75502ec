# Generated from src/assay/client/_async/adjudication.py by tools/gen_sync_client.py:
# edit the asyncio source and regenerate (`just sync-client`), never this file.
"""Adjudication's client: every RPC, plus the review workflow in plain values.

``AsyncAdjudicationClient``; ``AdjudicationClient`` is generated from it, the same
methods not awaited. The workflow, in the order a case lives it: ``add_reviewer`` ->
``enqueue`` -> ``review`` / ``decline`` (one per reviewer per round) -> ``adjudicate`` or
``resolve_unanimous`` -> ``freeze`` -> ``latest_gold_label`` / ``export``.
Mutating calls get a fresh ``request_id`` when the request has none, so the
channel's automatic retry of UNAVAILABLE never acts twice; pass your own
``request_id`` in the request message to make a retry across processes safe.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from assay.client import builders
from assay.client._sync.base import SyncClient
from assay.client.export import ExportItem, ExportTracker
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import gold_pb2

SERVICE = adj.DESCRIPTOR.services_by_name["AdjudicationService"]


class AdjudicationClient(SyncClient):
    """Blocking client for ``assay.v1.AdjudicationService``."""

    SERVICE = SERVICE

    def register_reviewer(
        self,
        request: adj.RegisterReviewerRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.RegisterReviewerResponse:
        return self._unary(
            "RegisterReviewer", request, adj.RegisterReviewerResponse, timeout, x_request_id
        )

    def get_reviewer(
        self,
        request: adj.GetReviewerRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetReviewerResponse:
        return self._unary("GetReviewer", request, adj.GetReviewerResponse, timeout, x_request_id)

    def list_reviewers(
        self,
        request: adj.ListReviewersRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ListReviewersResponse:
        return self._unary(
            "ListReviewers",
            request or adj.ListReviewersRequest(),
            adj.ListReviewersResponse,
            timeout,
            x_request_id,
        )

    def enqueue_case(
        self,
        request: adj.EnqueueCaseRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.EnqueueCaseResponse:
        return self._unary("EnqueueCase", request, adj.EnqueueCaseResponse, timeout, x_request_id)

    def enqueue_cases(
        self,
        request: adj.EnqueueCasesRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.EnqueueCasesResponse:
        return self._unary("EnqueueCases", request, adj.EnqueueCasesResponse, timeout, x_request_id)

    def get_case(
        self,
        request: adj.GetCaseRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetCaseResponse:
        return self._unary("GetCase", request, adj.GetCaseResponse, timeout, x_request_id)

    def get_blinded_case(
        self,
        request: adj.GetBlindedCaseRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetBlindedCaseResponse:
        return self._unary(
            "GetBlindedCase", request, adj.GetBlindedCaseResponse, timeout, x_request_id
        )

    def list_queue(
        self,
        request: adj.ListQueueRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ListQueueResponse:
        return self._unary("ListQueue", request, adj.ListQueueResponse, timeout, x_request_id)

    def list_adjudication_queue(
        self,
        request: adj.ListAdjudicationQueueRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ListAdjudicationQueueResponse:
        return self._unary(
            "ListAdjudicationQueue",
            request,
            adj.ListAdjudicationQueueResponse,
            timeout,
            x_request_id,
        )

    def submit_review(
        self,
        request: adj.SubmitReviewRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.SubmitReviewResponse:
        return self._unary("SubmitReview", request, adj.SubmitReviewResponse, timeout, x_request_id)

    def get_case_state(
        self,
        request: adj.GetCaseStateRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetCaseStateResponse:
        return self._unary("GetCaseState", request, adj.GetCaseStateResponse, timeout, x_request_id)

    def resolve_case(
        self,
        request: adj.ResolveCaseRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ResolveCaseResponse:
        return self._unary("ResolveCase", request, adj.ResolveCaseResponse, timeout, x_request_id)

    def freeze_gold_label(
        self,
        request: adj.FreezeGoldLabelRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.FreezeGoldLabelResponse:
        return self._unary(
            "FreezeGoldLabel", request, adj.FreezeGoldLabelResponse, timeout, x_request_id
        )

    def list_gold_label_revisions(
        self,
        request: adj.ListGoldLabelRevisionsRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ListGoldLabelRevisionsResponse:
        return self._unary(
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
    ) -> Iterator[adj.ExportCorpusResponse]:
        return self._stream(
            "ExportCorpus",
            request or adj.ExportCorpusRequest(),
            adj.ExportCorpusResponse,
            timeout,
            x_request_id,
        )

    def compute_agreement(
        self,
        request: adj.ComputeAgreementRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ComputeAgreementResponse:
        return self._unary(
            "ComputeAgreement",
            request or adj.ComputeAgreementRequest(),
            adj.ComputeAgreementResponse,
            timeout,
            x_request_id,
        )

    def verify_audit_chain(
        self,
        request: adj.VerifyAuditChainRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.VerifyAuditChainResponse:
        return self._unary(
            "VerifyAuditChain",
            request or adj.VerifyAuditChainRequest(),
            adj.VerifyAuditChainResponse,
            timeout,
            x_request_id,
        )

    def list_audit_events(
        self,
        request: adj.ListAuditEventsRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.ListAuditEventsResponse:
        return self._unary(
            "ListAuditEvents",
            request or adj.ListAuditEventsRequest(),
            adj.ListAuditEventsResponse,
            timeout,
            x_request_id,
        )

    def get_checkpoint(
        self,
        request: adj.GetCheckpointRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetCheckpointResponse:
        return self._unary(
            "GetCheckpoint",
            request or adj.GetCheckpointRequest(),
            adj.GetCheckpointResponse,
            timeout,
            x_request_id,
        )

    def get_inclusion_proof(
        self,
        request: adj.GetInclusionProofRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetInclusionProofResponse:
        return self._unary(
            "GetInclusionProof",
            request,
            adj.GetInclusionProofResponse,
            timeout,
            x_request_id,
        )

    def get_consistency_proof(
        self,
        request: adj.GetConsistencyProofRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.GetConsistencyProofResponse:
        return self._unary(
            "GetConsistencyProof",
            request,
            adj.GetConsistencyProofResponse,
            timeout,
            x_request_id,
        )

    def delete_tenant_records(
        self,
        request: adj.DeleteTenantRecordsRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.DeleteTenantRecordsResponse:
        return self._unary(
            "DeleteTenantRecords", request, adj.DeleteTenantRecordsResponse, timeout, x_request_id
        )

    def sweep_expired_records(
        self,
        request: adj.SweepExpiredRecordsRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> adj.SweepExpiredRecordsResponse:
        return self._unary(
            "SweepExpiredRecords",
            request or adj.SweepExpiredRecordsRequest(),
            adj.SweepExpiredRecordsResponse,
            timeout,
            x_request_id,
        )

    # Workflow convenience.

    def add_reviewer(
        self,
        reviewer_id: str,
        kind: int | str,
        attested_by: str = "",
        *,
        timeout: float | None = None,
    ) -> adj.Reviewer:
        """Register a reviewer (``HUMAN`` needs ``attested_by``; or ``MECHANISM_TEST_FIXTURE``)."""
        request = builders.register_reviewer_request(reviewer_id, kind, attested_by)
        response = self.register_reviewer(request, timeout=timeout)
        return response.reviewer

    def enqueue(
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
        response = self.enqueue_case(request, timeout=timeout)
        return response.case

    def review(
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
        return self.submit_review(request, timeout=timeout)

    def decline(
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
        return self.submit_review(request, timeout=timeout)

    def adjudicate(
        self, case_id: str, adjudicator_id: str, label: Any, *, timeout: float | None = None
    ) -> adj.ResolveCaseResponse:
        """Resolve a disagreement: the adjudicator (not a reviewer of the round) chooses."""
        return self.resolve_case(
            builders.adjudicate_request(case_id, adjudicator_id, label), timeout=timeout
        )

    def resolve_unanimous(
        self, case_id: str, *, timeout: float | None = None
    ) -> adj.ResolveCaseResponse:
        """Resolve a round on which the reviewers agree."""
        return self.resolve_case(builders.unanimous_request(case_id), timeout=timeout)

    def freeze(
        self, case_id: str, *, expected_revision: int = 0, timeout: float | None = None
    ) -> gold_pb2.GoldLabelRevision:
        """Freeze the resolved round into the next gold-label revision."""
        request = adj.FreezeGoldLabelRequest(case_id=case_id, expected_revision=expected_revision)
        response = self.freeze_gold_label(request, timeout=timeout)
        return response.revision

    def gold_labels(
        self, case_id: str = "", *, timeout: float | None = None
    ) -> Iterator[gold_pb2.GoldLabelRevision]:
        """Every gold-label revision (of one case, or all), following pages."""
        token = ""
        while True:
            request = adj.ListGoldLabelRevisionsRequest(case_id=case_id, page_token=token)
            page = self.list_gold_label_revisions(request, timeout=timeout)
            yield from page.revisions
            token = page.next_page_token
            if not token:
                return

    def latest_gold_label(
        self, case_id: str, *, timeout: float | None = None
    ) -> gold_pb2.GoldLabelRevision | None:
        """The case's latest gold-label revision, or None before its first freeze."""
        latest = None
        for revision in self.gold_labels(case_id, timeout=timeout):
            latest = revision
        return latest

    def reviewers(self, *, timeout: float | None = None) -> Iterator[adj.Reviewer]:
        """Every registered reviewer, following pages."""
        token = ""
        while True:
            request = adj.ListReviewersRequest(page_token=token)
            page = self.list_reviewers(request, timeout=timeout)
            yield from page.reviewers
            token = page.next_page_token
            if not token:
                return

    def queue(
        self, reviewer_id: str, tenant: str = "", *, timeout: float | None = None
    ) -> Iterator[adj.BlindedCase]:
        """The blinded cases ``reviewer_id`` still has to review, following pages."""
        token = ""
        while True:
            request = adj.ListQueueRequest(reviewer_id=reviewer_id, tenant=tenant, page_token=token)
            page = self.list_queue(request, timeout=timeout)
            yield from page.cases
            token = page.next_page_token
            if not token:
                return

    def worklist(
        self, adjudicator_id: str, tenant: str = "", *, timeout: float | None = None
    ) -> Iterator[adj.AdjudicationItem]:
        """The disagreed cases ``adjudicator_id`` may decide (no verdict, with the round's
        reviews), following pages."""
        token = ""
        while True:
            request = adj.ListAdjudicationQueueRequest(
                adjudicator_id=adjudicator_id, tenant=tenant, page_token=token
            )
            page = self.list_adjudication_queue(request, timeout=timeout)
            yield from page.items
            token = page.next_page_token
            if not token:
                return

    def audit_events(self, *, timeout: float | None = None) -> Iterator[adj.AuditEvent]:
        """The whole audit ledger in sequence order, following pages."""
        token = ""
        while True:
            request = adj.ListAuditEventsRequest(page_token=token)
            page = self.list_audit_events(request, timeout=timeout)
            yield from page.events
            token = page.next_page_token
            if not token:
                return

    def export(
        self,
        tenant: str = "",
        *,
        batch_size: int = 0,
        include_reviews: bool = False,
        timeout: float | None = None,
    ) -> Iterator[ExportItem]:
        """The corpus: each ``CorpusRecord`` (with its reviews when ``include_reviews``),
        then the ``ExportManifest``, last.

        Raises ``DataLossError`` when the stream ends without its manifest: an
        export that cannot prove it is complete is not returned as if it were.
        """
        tracker = ExportTracker()
        request = adj.ExportCorpusRequest(
            tenant=tenant, batch_size=batch_size, include_reviews=include_reviews
        )
        for message in self.export_corpus(request, timeout=timeout):
            yield from tracker.items(message)
        tracker.finish()

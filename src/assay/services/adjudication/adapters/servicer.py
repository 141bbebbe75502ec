"""The gRPC adapter: translate each request, call ``operations``, translate the answer back.

Mutations hand ``operations`` a render function, because the response to a
request id is stored (as deterministic bytes) in the same transaction as the
change it reports: a retry then returns exactly the first response. Those
bytes are what the mutation returns; the runtime sends them as they are.

The runtime has authenticated the call and checked its roles before it gets
here; each method hands the caller (``current_principal()``, as a domain
``Caller``) down, and the rules that use it live in ``permissions``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, TypeVar

import grpc

from assay.runtime import paging
from assay.services.adjudication.adapters.call_context import caller, request_key, response_bytes
from assay.services.adjudication.domain.model import CaseState, ChainHead, ExportTally, Review
from assay.services.adjudication.domain.times import now
from assay.services.adjudication.storage.interface import ApprovalBatch, ExportBatch
from assay.services.adjudication.use_cases import calibration
from assay.services.adjudication.use_cases.assignments import Assignments
from assay.services.adjudication.use_cases.lookups import Lookups, Page
from assay.services.adjudication.use_cases.operations import Adjudication
from assay.services.adjudication.use_cases.transparency import TransparencyLog
from assay.services.adjudication.wire import approval_export, convert, listings
from assay.services.adjudication.wire import assignments as wire_assignments
from assay.services.adjudication.wire import calibration as wire_calibration
from assay.v1 import adjudication_service_pb2 as pb

T = TypeVar("T")
M = TypeVar("M", bound=Any)


class _Converted(Generic[T, M]):
    """A listing's items converted once: measured (``size``, what a page's byte budget
    counts) and then the same messages put in the response."""

    def __init__(self, convert_one: Callable[[T], M]) -> None:
        self._convert = convert_one
        self._done: dict[int, M] = {}

    def size(self, item: T) -> int:
        message = self._done[id(item)] = self._convert(item)
        # The message, plus its key and length as an element of a repeated field.
        return int(message.ByteSize()) + 6

    def __call__(self, item: T) -> M:
        found = self._done.get(id(item))
        return found if found is not None else self._convert(item)


def _within(response: pb.ExportCorpusResponse, budget: int) -> list[pb.ExportCorpusResponse]:
    """An export batch as messages of at most ``budget`` bytes of records (or approvals) each
    (at least one each), in order: a batch of large labels would pass the largest message."""
    if response.ByteSize() <= budget:
        return [response]
    if response.WhichOneof("item") == "approvals":
        found = list(response.approvals.approvals)

        def approvals(part: list[Any]) -> pb.ExportCorpusResponse:
            return pb.ExportCorpusResponse(approvals=pb.ApprovalExportBatch(approvals=part))

        return _split(found, budget, approvals)

    def records(part: list[Any]) -> pb.ExportCorpusResponse:
        return pb.ExportCorpusResponse(batch=pb.CorpusRecordBatch(records=part))

    return _split(list(response.batch.records), budget, records)


def _split(
    items: list[Any], budget: int, make: Callable[[list[Any]], pb.ExportCorpusResponse]
) -> list[pb.ExportCorpusResponse]:
    sizes = [item.ByteSize() + 6 for item in items]
    split: list[pb.ExportCorpusResponse] = []
    start = 0
    while start < len(items):
        kept = paging.fitting(iter(sizes[start:]), budget)
        split.append(make(items[start : start + kept]))
        start += kept
    return split


async def _person_page(
    lookup: Callable[..., Awaitable[Page[T]]],
    person_id: str,
    request: pb.ListQueueRequest | pb.ListAdjudicationQueueRequest,
    convert_one: Callable[[T], M],
) -> tuple[list[M], str]:
    """One page of a person's list (a reviewer's queue, an adjudicator's worklist): each item
    converted once, measured against the page's byte budget, and the next page's token."""
    converted = _Converted(convert_one)
    page = await lookup(
        person_id,
        request.tenant,
        request.page_size,
        request.page_token,
        caller(),
        converted.size,
    )
    return [converted(item) for item in page.items], page.next_page_token


def _review_answer(
    response: type[pb.SubmitReviewResponse | pb.AmendReviewResponse | pb.WithdrawReviewResponse],
) -> Callable[[tuple[Review, CaseState]], bytes]:
    """How SubmitReview, AmendReview and WithdrawReview answer: the record and the state."""
    return lambda r: response_bytes(
        response(review=convert.review(r[0]), state=convert.case_state(r[1]))
    )


class AdjudicationServicer:
    """Implements ``assay.v1.AdjudicationService``."""

    def __init__(self, adjudication: Adjudication, lookups: Lookups, log: TransparencyLog) -> None:
        self.adjudication = adjudication
        self.lookups = lookups
        self.log = log
        self.assignments = Assignments(
            adjudication.store, adjudication.clock, adjudication.review, lookups.page_bytes
        )

    # --- reviewers ---------------------------------------------------------

    async def RegisterReviewer(
        self, request: pb.RegisterReviewerRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        given = request.reviewer
        return await self.adjudication.register_reviewer(
            request_key(request),
            given.reviewer_id,
            convert.reviewer_kind(given.kind),
            given.attested_by,
            lambda r: response_bytes(pb.RegisterReviewerResponse(reviewer=convert.reviewer(r))),
            caller(),
        )

    async def GetReviewer(
        self, request: pb.GetReviewerRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetReviewerResponse:
        found = await self.lookups.reviewer(request.reviewer_id, caller())
        return pb.GetReviewerResponse(reviewer=convert.reviewer(found))

    async def ListReviewers(
        self, request: pb.ListReviewersRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListReviewersResponse:
        page = await self.lookups.reviewers(request.page_size, request.page_token)
        return pb.ListReviewersResponse(
            reviewers=[convert.reviewer(r) for r in page.items],
            next_page_token=page.next_page_token,
        )

    async def EnqueueCase(
        self, request: pb.EnqueueCaseRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        item = convert.batch_item(request.case, "case")
        return await self.adjudication.enqueue_case(
            request_key(request),
            item.data,
            lambda c: response_bytes(pb.EnqueueCaseResponse(case=convert.case(c))),
            caller(),
            item.unreadable,
        )

    async def GetCase(
        self, request: pb.GetCaseRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetCaseResponse:
        who = caller()
        found = convert.case_detail(await self.lookups.case_detail(request.case_id, who))
        if who.operator:  # who else is assigned is never shown to a reviewer or adjudicator
            found.assigned_reviewer_ids.extend(await self.assignments.assigned(request.case_id))
        return found

    async def GetBlindedCase(
        self, request: pb.GetBlindedCaseRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetBlindedCaseResponse:
        found = await self.lookups.blinded(request.case_id, caller())
        return pb.GetBlindedCaseResponse(case=convert.blinded(found))

    async def ListQueue(
        self, request: pb.ListQueueRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListQueueResponse:
        cases, token = await _person_page(
            self.assignments.queue, request.reviewer_id, request, wire_assignments.queue_item
        )
        return pb.ListQueueResponse(cases=cases, next_page_token=token)

    async def GetCaseState(
        self, request: pb.GetCaseStateRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetCaseStateResponse:
        snap, state = await self.lookups.case_state(request.case_id, caller())
        return pb.GetCaseStateResponse(
            case_id=snap.case.case_id,
            state=convert.case_state(state),
            round=snap.round,
            review_count=len(snap.round_reviews),
            revision_count=snap.revision_count,
            expired=now() >= snap.case.expire_time,
            required_reviews=snap.case.required_reviews,
        )

    # --- reviews and resolutions ---------------------------------------------

    async def SubmitReview(
        self, request: pb.SubmitReviewRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self.adjudication.submit_review(
            request_key(request),
            convert.submission(request),
            _review_answer(pb.SubmitReviewResponse),
            caller(),
        )

    async def ResolveCase(
        self, request: pb.ResolveCaseRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self.adjudication.resolve_case(
            request_key(request),
            convert.resolve_request(request),
            lambda r: response_bytes(
                pb.ResolveCaseResponse(
                    resolution=convert.resolution(r[0]), state=convert.case_state(r[1])
                )
            ),
            caller(),
        )

    async def FreezeGoldLabel(
        self, request: pb.FreezeGoldLabelRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self.adjudication.freeze(
            request_key(request),
            request.case_id,
            request.expected_revision,
            lambda rev: response_bytes(
                pb.FreezeGoldLabelResponse(revision=convert.gold_label(rev))
            ),
            caller(),
        )

    # --- the corpus --------------------------------------------------------

    async def ListGoldLabelRevisions(
        self, request: pb.ListGoldLabelRevisionsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListGoldLabelRevisionsResponse:
        revisions = _Converted(convert.gold_label)
        page = await self.lookups.gold_labels(
            request.case_id, request.page_size, request.page_token, caller(), revisions.size
        )
        return pb.ListGoldLabelRevisionsResponse(
            revisions=[revisions(r) for r in page.items],
            next_page_token=page.next_page_token,
        )

    async def ExportCorpus(
        self, request: pb.ExportCorpusRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.ExportCorpusResponse]:
        started = now()
        tally = ExportTally()
        head = ChainHead(0, "")
        approvals = 0
        async for item in self.lookups.export(
            request.tenant,
            request.batch_size,
            caller(),
            request.include_reviews,
            request.include_approvals,
        ):
            if isinstance(item, ChainHead):
                head = item
                continue
            if isinstance(item, ApprovalBatch):
                approvals += len(item.approvals)
                batch = await self._approvals(item, head.sequence)
            else:
                batch = await self._batch(item, tally, head.sequence)
            for message in _within(batch, self.lookups.page_bytes):
                yield message
        manifest = convert.manifest(tally, head, started, request.tenant)
        manifest.approval_count = approvals
        manifest.checkpoint = (await self.log.checkpoint(head.sequence)).note
        yield pb.ExportCorpusResponse(manifest=manifest)

    async def _approvals(self, item: ApprovalBatch, size: int) -> pb.ExportCorpusResponse:
        """The approvals, each event with its inclusion proof in the tree of ``size`` events
        (the export's head, whose checkpoint the manifest signs)."""
        sequences = sorted({n for a in item.approvals for n in approval_export.sequences(a)})
        proofs = dict(zip(sequences, await self.log.inclusions(sequences, size), strict=True))
        found = [approval_export.exported(a, proofs) for a in item.approvals]
        return pb.ExportCorpusResponse(approvals=pb.ApprovalExportBatch(approvals=found))

    async def _batch(
        self, item: ExportBatch, tally: ExportTally, size: int
    ) -> pb.ExportCorpusResponse:
        """The batch, each record with the inclusion proofs of its events (its label's, its
        case's and its reviews') in the tree of ``size`` events: the export's head, whose
        checkpoint the manifest signs."""
        tally.exclusions.extend(item.exclusions)
        for record in item.records:
            tally.add(record.revision)
        sequences = sorted(
            {
                event.sequence
                for r in item.records
                for event in (r.event, r.case_event, r.resolution_event, *r.review_events)
                if event is not None
            }
        )
        proofs = dict(zip(sequences, await self.log.inclusions(sequences, size), strict=True))
        batch = pb.CorpusRecordBatch(
            records=[convert.corpus_record(r, proofs) for r in item.records]
        )
        return pb.ExportCorpusResponse(batch=batch)

    async def ComputeAgreement(
        self, request: pb.ComputeAgreementRequest, context: grpc.aio.ServicerContext
    ) -> pb.ComputeAgreementResponse:
        found = await self.lookups.agreement(request.tenant, request.bootstrap_resamples, caller())
        return convert.agreement(found)

    async def CalibrateReliability(
        self, request: pb.CalibrateReliabilityRequest, context: grpc.aio.ServicerContext
    ) -> pb.CalibrateReliabilityResponse:
        found = await calibration.calibrate_reliability(
            self.lookups,
            request.tenant,
            dict(request.declared),
            request.include_synthetic,
            request.min_count,
            request.tree_size,
            caller(),
            self._root,
        )
        return wire_calibration.response(found)

    async def _root(self, size: int) -> bytes:
        """The transparency log's root hash over its first ``size`` events."""
        return (await self.log.checkpoint(size)).checkpoint.root

    # --- the ledger and deletion -------------------------------------------

    async def VerifyAuditChain(
        self, request: pb.VerifyAuditChainRequest, context: grpc.aio.ServicerContext
    ) -> pb.VerifyAuditChainResponse:
        return convert.verdict(await self.lookups.verify())

    async def ListAuditEvents(
        self, request: pb.ListAuditEventsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListAuditEventsResponse:
        page = await self.lookups.audit_events(
            request.page_size,
            request.page_token,
            caller(),
            self.log.disagreeing,
            listings.audit_query(request),
        )
        return pb.ListAuditEventsResponse(
            events=[convert.audit_event(e) for e in page.items],
            next_page_token=page.next_page_token,
        )

    async def DeleteTenantRecords(
        self, request: pb.DeleteTenantRecordsRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self.adjudication.delete_tenant(
            request_key(request),
            request.tenant,
            lambda r: response_bytes(
                pb.DeleteTenantRecordsResponse(deleted=convert.deleted(r[0]), audit_sequence=r[1])
            ),
            caller(),
        )

    async def SweepExpiredRecords(
        self, request: pb.SweepExpiredRecordsRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self.adjudication.sweep(
            request_key(request),
            lambda r: response_bytes(
                pb.SweepExpiredRecordsResponse(deleted=convert.deleted(r[0]), audit_sequence=r[1])
            ),
            caller(),
        )

    # --- the transparency log -----------------------------------------------

    async def GetCheckpoint(
        self, request: pb.GetCheckpointRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetCheckpointResponse:
        signed = await self.log.checkpoint()
        return pb.GetCheckpointResponse(
            signed_note=signed.note,
            origin=signed.checkpoint.origin,
            tree_size=signed.checkpoint.size,
            root_hash=signed.checkpoint.root,
            public_key_pem=self.log.public_key_pem(),
        )

    async def GetInclusionProof(
        self, request: pb.GetInclusionProofRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetInclusionProofResponse:
        index, size, hashes = await self.log.inclusion(request.sequence, request.tree_size)
        return pb.GetInclusionProofResponse(leaf_index=index, tree_size=size, hashes=hashes)

    async def GetConsistencyProof(
        self, request: pb.GetConsistencyProofRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetConsistencyProofResponse:
        size, hashes = await self.log.consistency(request.first_size, request.second_size)
        return pb.GetConsistencyProofResponse(hashes=hashes, second_size=size)

    # --- the case queue -----------------------------------------------------

    async def EnqueueCases(
        self, request: pb.EnqueueCasesRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self.adjudication.enqueue_cases(
            request_key(request),
            convert.batch_items(request.cases),
            lambda stored: response_bytes(
                pb.EnqueueCasesResponse(cases=[convert.case(c) for c in stored])
            ),
            caller(),
            request.required_reviews,
        )

    async def ListAdjudicationQueue(
        self, request: pb.ListAdjudicationQueueRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListAdjudicationQueueResponse:
        items, token = await _person_page(
            self.lookups.worklist, request.adjudicator_id, request, convert.adjudication_item
        )
        return pb.ListAdjudicationQueueResponse(items=items, next_page_token=token)

    # --- review revisions -----------------------------------------------------

    async def AmendReview(
        self, request: pb.AmendReviewRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self._revise(request, pb.AmendReviewResponse)

    async def WithdrawReview(
        self, request: pb.WithdrawReviewRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self._revise(request, pb.WithdrawReviewResponse)

    async def _revise(
        self,
        request: pb.AmendReviewRequest | pb.WithdrawReviewRequest,
        response: type[pb.AmendReviewResponse | pb.WithdrawReviewResponse],
    ) -> bytes:
        return await self.adjudication.revise_review(
            request_key(request), convert.revision(request), _review_answer(response), caller()
        )

    # --- assignment -------------------------------------------------------------

    async def AssignCases(
        self, request: pb.AssignCasesRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self.assignments.assign(
            request_key(request),
            wire_assignments.assign_request(request),
            lambda found: response_bytes(wire_assignments.assignments(found)),
            caller(),
        )

    async def UnassignCase(
        self, request: pb.UnassignCaseRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self.assignments.unassign(
            request_key(request),
            wire_assignments.unassign_request(request),
            lambda found: response_bytes(
                pb.UnassignCaseResponse(assignment=wire_assignments.case_assignment(found))
            ),
            caller(),
        )

    # --- finding work ---------------------------------------------------------

    async def ListCases(
        self, request: pb.ListCasesRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListCasesResponse:
        page = await self.lookups.cases(listings.case_query(request), caller())
        return pb.ListCasesResponse(
            cases=[listings.case_summary(c) for c in page.items],
            next_page_token=page.next_page_token,
        )

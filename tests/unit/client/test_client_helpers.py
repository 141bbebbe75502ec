"""Pure client helpers: requests from plain values, gold labels as claims, export shape."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from assay.client import LegacyBundleWarning
from assay.client.builders import (
    acquisition_policy,
    as_evidence,
    enqueue_case_request,
    enum_number,
    from_value,
    plan_request,
    to_value,
)
from assay.client.errors import DataLossError
from assay.client.export import ExportTracker
from assay.client.gold import HUMAN_SOURCE, SYNTHETIC_SOURCE, gold_label_claim, source_for
from assay.client.listing_builders import audit_events_request, list_cases_request
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import claim_pb2, gold_pb2, plan_pb2

CLAIM = {"subject": "s", "predicate": "p", "value": 1, "source": "api_spec", "confidence": 0.5}


class TestEnums:
    @pytest.mark.parametrize(
        "given",
        ["VCS_READ", "vcs_read", "SIDE_EFFECT_CLASS_VCS_READ", plan_pb2.SIDE_EFFECT_CLASS_VCS_READ],
    )
    def test_short_full_and_numeric_names_are_accepted(self, given: int | str) -> None:
        """Enum arguments take the short name, the full name, or the number."""
        number = enum_number(plan_pb2.SideEffectClass, given, "SIDE_EFFECT_CLASS_")
        assert number == plan_pb2.SIDE_EFFECT_CLASS_VCS_READ

    @pytest.mark.parametrize("given", ["TELEPATHY", 99])
    def test_unknown_names_are_errors(self, given: int | str) -> None:
        """An unknown enum name or number is a ValueError, not a silent zero."""
        with pytest.raises(ValueError, match=r"TELEPATHY|99"):
            enum_number(plan_pb2.SideEffectClass, given, "SIDE_EFFECT_CLASS_")


class TestKeywordRequests:
    """The builders that take a TypedDict's keywords refuse what a written-out signature
    would: an unknown (misspelt) keyword, a missing required one; left out, a filter keeps
    its default."""

    @pytest.mark.parametrize(
        ("build", "name", "valid"),
        [
            (list_cases_request, "list_cases_request", {"tenant": "t"}),
            (audit_events_request, "audit_events_request", {"case_id": "c"}),
            (
                enqueue_case_request,
                "enqueue_case_request",
                {
                    "tenant": "t",
                    "subject": "s",
                    "predicate": "p",
                    "candidate_values": [1],
                    "local_verdict": 1,
                },
            ),
        ],
    )
    def test_an_unknown_keyword_is_a_type_error(
        self, build: Any, name: str, valid: dict[str, Any]
    ) -> None:
        build(**valid)
        with pytest.raises(TypeError, match=rf"^{name}\(\) unknown keywords: newest_frist$"):
            build(**valid, newest_frist=True)

    def test_a_missing_required_keyword_is_a_type_error(self) -> None:
        with pytest.raises(TypeError, match=r"missing keywords: local_verdict, subject"):
            enqueue_case_request(tenant="t", predicate="p", candidate_values=[1])  # type: ignore[call-arg]

    def test_left_out_filters_keep_their_defaults(self) -> None:
        assert list_cases_request() == adj.ListCasesRequest(order=adj.CASE_ORDER_OLDEST_FIRST)
        assert audit_events_request() == adj.ListAuditEventsRequest()
        newest = list_cases_request(states=["DISAGREED"], newest_first=True, page_size=3)
        assert list(newest.states) == [adj.CASE_STATE_DISAGREED]
        assert newest.order == adj.CASE_ORDER_NEWEST_FIRST
        assert newest.page_size == 3


class TestEvidence:
    def test_dicts_messages_and_documents_give_the_same_evidence(self) -> None:
        """A list of dicts, a {claims} document and a message all become the same Evidence."""
        from_list = as_evidence([CLAIM])
        from_doc = as_evidence({"claims": [CLAIM]})
        assert from_list == from_doc
        assert as_evidence(from_list) is from_list
        assert from_list.claims[0].source == "api_spec"

    def test_a_legacy_bundle_loads_empty_with_a_warning(self) -> None:
        """The old {items, confidence} shape loads lossily and says so."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            evidence = as_evidence({"items": [{"x": 1}], "confidence": 0.6})
        assert list(evidence.claims) == []
        assert [w.category for w in caught] == [LegacyBundleWarning]

    def test_claim_messages_and_dicts_mix_in_a_list(self) -> None:
        """Claim messages and dicts can be mixed in a list of claims."""
        message = claim_pb2.Claim(subject="s", predicate="p", source="api_spec", confidence=0.5)
        evidence = as_evidence([message, CLAIM])
        assert [c.source for c in evidence.claims] == ["api_spec", "api_spec"]

    def test_values_round_trip(self) -> None:
        """Plain JSON values survive to_value/from_value unchanged."""
        for value in ["a", 1.5, True, {"k": [1, "x"]}, [1, 2]]:
            assert from_value(to_value(value)) == value


class TestPlanRequest:
    def test_policy_capabilities_and_notes_are_built_from_names(self) -> None:
        """Grants, capabilities and missing-signal notes are translated from short names."""
        request = plan_request(
            [CLAIM],
            "s",
            "p",
            policy=acquisition_policy(["FILESYSTEM_READ"], egress_allowed=True),
            capabilities={"TOOL_TRACE": "UNSUPPORTED"},
            missing_signals=[("PROCESS_RESULT", "COLLECTION_FAILED", "crashed")],
        )
        assert list(request.policy.granted_side_effects) == [
            plan_pb2.SIDE_EFFECT_CLASS_FILESYSTEM_READ
        ]
        assert request.policy.egress_allowed
        assert request.capabilities.signals[0].availability == (
            plan_pb2.SIGNAL_AVAILABILITY_UNSUPPORTED
        )
        assert request.missing_signals[0].note == "crashed"


def revision(
    provenance: gold_pb2.LabelingProvenance.ValueType, label: str | None = "key"
) -> gold_pb2.GoldLabelRevision:
    rev = gold_pb2.GoldLabelRevision(
        case_id="case_1",
        revision=2,
        provenance=provenance,
        basis=gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION,
        digest="sha256:ab",
    )
    if label is not None:
        rev.label.CopyFrom(to_value(label))
    rev.freeze_time.FromSeconds(1_700_000_000)
    return rev


CASE = adj.BlindedCase(case_id="case_1", subject="api:x", predicate="idempotency.mode")


class TestGoldLabelClaims:
    @pytest.mark.parametrize(
        ("provenance", "source"),
        [
            (gold_pb2.LABELING_PROVENANCE_HUMAN_ADJUDICATED, HUMAN_SOURCE),
            (gold_pb2.LABELING_PROVENANCE_SYNTHETIC_MECHANISM_TEST, SYNTHETIC_SOURCE),
            (gold_pb2.LABELING_PROVENANCE_UNSPECIFIED, SYNTHETIC_SOURCE),
        ],
    )
    def test_only_human_adjudicated_labels_claim_the_human_review_source(
        self, provenance: gold_pb2.LabelingProvenance.ValueType, source: str
    ) -> None:
        """A fixture's label never comes back as human_review; unknown provenance is not human."""
        assert source_for(provenance) == source
        claim = gold_label_claim(revision(provenance), CASE)
        assert claim is not None
        assert claim.source == source

    def test_the_claim_keeps_the_labels_provenance_visible(self) -> None:
        """Method, source_ref, revision and group name the provenance, the case and the digest."""
        claim = gold_label_claim(
            revision(gold_pb2.LABELING_PROVENANCE_SYNTHETIC_MECHANISM_TEST), CASE
        )
        assert claim is not None
        assert (claim.subject, claim.predicate) == ("api:x", "idempotency.mode")
        assert claim.value.string_value == "key"
        assert claim.method == "gold-label/synthetic_mechanism_test/adjudicator_decision"
        assert claim.source_ref == "adjudication:case/case_1"
        assert claim.source_revision == "r2 sha256:ab"
        assert claim.correlation_group == "adjudication:case_1"
        assert claim.observe_time.seconds == 1_700_000_000
        assert claim.confidence == 1.0

    def test_a_label_without_a_value_makes_no_claim(self) -> None:
        """UNRESOLVED / NOT_EVALUABLE revisions carry no label, hence no evidence for a value."""
        rev = revision(gold_pb2.LABELING_PROVENANCE_HUMAN_ADJUDICATED, label=None)
        assert gold_label_claim(rev, CASE) is None


def batch(n: int) -> adj.ExportCorpusResponse:
    return adj.ExportCorpusResponse(
        batch=adj.CorpusRecordBatch(records=[adj.CorpusRecord() for _ in range(n)])
    )


def manifest(count: int, approvals: int = 0) -> adj.ExportCorpusResponse:
    return adj.ExportCorpusResponse(
        manifest=adj.ExportManifest(record_count=count, approval_count=approvals)
    )


def approval_batch(n: int) -> adj.ExportCorpusResponse:
    found = [adj.ExportedApproval() for _ in range(n)]
    return adj.ExportCorpusResponse(approvals=adj.ApprovalExportBatch(approvals=found))


class TestExportTracker:
    def test_records_then_manifest(self) -> None:
        """Batches flatten into records; the manifest comes last and is returned by finish."""
        tracker = ExportTracker()
        items = [i for m in (batch(2), batch(1), manifest(3)) for i in tracker.items(m)]
        assert [type(i).__name__ for i in items] == ["CorpusRecord"] * 3 + ["ExportManifest"]
        assert tracker.finish().record_count == 3

    def test_records_then_approvals_then_manifest(self) -> None:
        """Approval batches flatten too, and the manifest counts them."""
        tracker = ExportTracker()
        messages = (batch(1), approval_batch(2), manifest(1, 2))
        items = [i for m in messages for i in tracker.items(m)]
        names = [type(i).__name__ for i in items]
        assert names == ["CorpusRecord", "ExportedApproval", "ExportedApproval", "ExportManifest"]

    @pytest.mark.parametrize(
        "messages",
        [
            [batch(2)],
            [batch(2), manifest(3)],
            [manifest(0), batch(1)],
            [approval_batch(2), manifest(0, 1)],
        ],
        ids=["no manifest", "count mismatch", "message after manifest", "approval mismatch"],
    )
    def test_an_incomplete_stream_is_data_loss(
        self, messages: list[adj.ExportCorpusResponse]
    ) -> None:
        """A stream cut short or inconsistent raises DataLossError instead of passing as whole."""
        tracker = ExportTracker()

        def drain() -> None:
            for message in messages:
                list(tracker.items(message))
            tracker.finish()

        with pytest.raises(DataLossError):
            drain()

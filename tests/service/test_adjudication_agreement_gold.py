"""Percent agreement, Gwet's AC1/AC2, each reviewer against gold and each round's agreement,
through a real server on both engines and through ``assay agreement``."""

from __future__ import annotations

import asyncio
import io
from contextlib import redirect_stdout

import pytest

from assay.cli.main import main as cli
from assay.services.adjudication.domain import gwet
from assay.services.adjudication.domain.agreement import RatedRound, Rating
from assay.services.adjudication.domain.gold_agreement import wilson_interval
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc
from assay.v1 import gold_pb2
from tests.service.adjudication_support import (
    TIMEOUT,
    adjudication_server,
    case_message,
    register,
    rid,
)

# (ann's answer, bob's answer) per case: 16 of 20 agree; every label is a number.
ANSWERS = [(1, 1)] * 12 + [(2, 2)] * 4 + [(1, 2)] * 3 + [(1, 3)]


async def numeric_case(stub: pb_grpc.AdjudicationServiceStub, tenant: str) -> str:
    message = case_message(tenant=tenant)
    del message.candidate_values[:]
    for value in (1, 2, 3):
        message.candidate_values.add().number_value = value
    message.local_verdict.number_value = 1
    reply = await stub.EnqueueCase(
        pb.EnqueueCaseRequest(request_id=rid(), case=message), timeout=TIMEOUT
    )
    return str(reply.case.case_id)


async def answer(
    stub: pb_grpc.AdjudicationServiceStub, case_id: str, reviewer: str, value: int
) -> None:
    request = pb.SubmitReviewRequest(
        request_id=rid(), case_id=case_id, reviewer_id=reviewer, outcome=pb.REVIEW_OUTCOME_LABEL
    )
    request.label.number_value = value
    await stub.SubmitReview(request, timeout=TIMEOUT)


async def decide_and_freeze(
    stub: pb_grpc.AdjudicationServiceStub, case_id: str, agreed: bool, label: int
) -> None:
    """Unanimous when the two agree; otherwise cid (no reviewer of the round) decides."""
    request = pb.ResolveCaseRequest(request_id=rid(), case_id=case_id)
    if agreed:
        request.basis = gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT
    else:
        request.basis = gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION
        request.adjudicator_reviewer_id = "cid"
        request.label.number_value = label
    await stub.ResolveCase(request, timeout=TIMEOUT)
    await stub.FreezeGoldLabel(
        pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id), timeout=TIMEOUT
    )


def expected_units() -> list[RatedRound]:
    return [
        RatedRound((Rating("ann", str(a), True), Rating("bob", str(b), True))) for a, b in ANSWERS
    ]


class TestNewFigures:
    async def test_every_new_figure_through_the_service_and_the_cli(
        self, adjudication_db: str
    ) -> None:
        """Twenty frozen rounds of numeric labels, decided for ann when the two differ: the
        figures equal the domain's over the same rounds, ann matches gold 20 of 20 and bob 16,
        another tenant's rounds stay out, a split round shows its agreement on GetCase, and
        ``assay agreement`` prints the new lines."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cid"):
                await register(stub, name)
            split = ""
            for a, b in ANSWERS:
                case_id = await numeric_case(stub, "tenant-a")
                await answer(stub, case_id, "ann", a)
                await answer(stub, case_id, "bob", b)
                await decide_and_freeze(stub, case_id, a == b, a)
                split = split or (case_id if a != b else "")
            other = await numeric_case(stub, "tenant-b")
            await answer(stub, other, "bob", 3)
            await answer(stub, other, "ann", 3)
            await decide_and_freeze(stub, other, True, 3)
            scoped = await stub.ComputeAgreement(
                pb.ComputeAgreementRequest(tenant="tenant-a"), timeout=TIMEOUT
            )
            everything = await stub.ComputeAgreement(pb.ComputeAgreementRequest(), timeout=TIMEOUT)
            detail = await stub.GetCase(pb.GetCaseRequest(case_id=split), timeout=TIMEOUT)
            out = io.StringIO()

            def agreement_cli() -> int:
                with redirect_stdout(out):
                    return cli(["agreement", "--tenant", "tenant-a", "--target", server.target])

            assert await asyncio.to_thread(agreement_cli) == 0

        percent = scoped.percent_agreement
        assert percent.status == pb.AGREEMENT_STATUS_COMPUTED
        assert (percent.case_count, percent.value) == (20, pytest.approx(0.8))
        assert percent.ci_lower < percent.value < percent.ci_upper
        for found, expected in (
            (scoped.gwet_ac1, gwet.gwet_ac1(expected_units())),
            (scoped.gwet_ac2, gwet.gwet_ac2(expected_units())),
        ):
            assert found.status == pb.AGREEMENT_STATUS_COMPUTED
            assert found.value == pytest.approx(expected.value, abs=1e-12)
            assert (found.ci_lower, found.ci_upper) == pytest.approx(
                (expected.ci_lower, expected.ci_upper), abs=1e-12
            )
            assert found.fixture_reviewers_contributed
        assert scoped.gwet_ac2.value > scoped.gwet_ac1.value  # near misses earn part credit

        assert [r.reviewer_id for r in scoped.reviewers] == ["ann", "bob"]
        ann, bob = (r.gold_agreement for r in scoped.reviewers)
        assert (ann.status, ann.case_count, ann.value) == (pb.AGREEMENT_STATUS_COMPUTED, 20, 1.0)
        assert (bob.case_count, bob.value) == (20, pytest.approx(0.8))
        assert (bob.ci_lower, bob.ci_upper) == pytest.approx(wilson_interval(16, 20))
        assert ann.fixture_reviewers_contributed
        assert [r.gold_agreement.case_count for r in everything.reviewers] == [21, 21]
        assert everything.percent_agreement.case_count == 21

        (round_agreement,) = detail.round_agreements
        assert (round_agreement.round, round_agreement.review_count) == (1, 2)
        assert (round_agreement.agreeing_count, round_agreement.agreeing_share) == (1, 0.5)
        assert round_agreement.pairwise_agreement == 0.0

        printed = out.getvalue()
        assert "Percent agreement (no chance correction): 0.800" in printed
        assert "Gwet's AC1 (nominal): " in printed
        assert "Gwet's AC2 (quadratic weights): " in printed
        assert "agreement with the gold labels" in printed

    async def test_string_labels_leave_ac2_undefined_and_few_rounds_insufficient(
        self, adjudication_db: str
    ) -> None:
        """One round of string labels: every new figure INSUFFICIENT (no number), a reviewer
        with one frozen round INSUFFICIENT too; twenty: AC2 UNDEFINED, LABELS_NOT_ORDERED."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name)
            for count in range(20):
                reply = await stub.EnqueueCase(
                    pb.EnqueueCaseRequest(request_id=rid(), case=case_message()), timeout=TIMEOUT
                )
                case_id = reply.case.case_id
                for name in ("ann", "bob"):
                    request = pb.SubmitReviewRequest(
                        request_id=rid(),
                        case_id=case_id,
                        reviewer_id=name,
                        outcome=pb.REVIEW_OUTCOME_LABEL,
                    )
                    request.label.string_value = "key"
                    await stub.SubmitReview(request, timeout=TIMEOUT)
                if count == 0:
                    await decide_and_freeze(stub, case_id, True, 0)
                    few = await stub.ComputeAgreement(pb.ComputeAgreementRequest(), timeout=TIMEOUT)
            many = await stub.ComputeAgreement(pb.ComputeAgreementRequest(), timeout=TIMEOUT)
        for figure in (few.percent_agreement, few.gwet_ac1, few.gwet_ac2):
            assert figure.status == pb.AGREEMENT_STATUS_INSUFFICIENT
            assert (figure.case_count, figure.min_cases) == (1, 20)
            assert not figure.HasField("value")
        assert [r.gold_agreement.status for r in few.reviewers] == [
            pb.AGREEMENT_STATUS_INSUFFICIENT
        ] * 2
        assert many.gwet_ac2.status == pb.AGREEMENT_STATUS_UNDEFINED
        assert many.gwet_ac2.undefined_reason == pb.AGREEMENT_UNDEFINED_REASON_LABELS_NOT_ORDERED
        assert many.gwet_ac1.undefined_reason == (
            pb.AGREEMENT_UNDEFINED_REASON_DEGENERATE_MARGINALS
        )
        assert (many.percent_agreement.value, many.percent_agreement.ci_upper) == (1.0, 1.0)


class TestFinalAnswersOnly:
    async def test_an_amended_and_a_withdrawn_review_count_once_as_their_latest(
        self, adjudication_db: str
    ) -> None:
        """ann answers 2 then amends to 1; cy answers 1 then withdraws; bob answers 1:
        GetCase shows every record but agreement over the two final reviews, and agreement
        with gold counts one round for each of ann and bob and none for cy."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cy"):
                await register(stub, name)
            case_id = await numeric_case(stub, "tenant-a")
            first = pb.SubmitReviewRequest(
                request_id=rid(),
                case_id=case_id,
                reviewer_id="ann",
                outcome=pb.REVIEW_OUTCOME_LABEL,
            )
            first.label.number_value = 2
            submitted = await stub.SubmitReview(first, timeout=TIMEOUT)
            amend = pb.AmendReviewRequest(
                request_id=rid(),
                review_id=submitted.review.review_id,
                outcome=pb.REVIEW_OUTCOME_LABEL,
            )
            amend.label.number_value = 1
            await stub.AmendReview(amend, timeout=TIMEOUT)
            cy = pb.SubmitReviewRequest(
                request_id=rid(), case_id=case_id, reviewer_id="cy", outcome=pb.REVIEW_OUTCOME_LABEL
            )
            cy.label.number_value = 1
            withdrawn = await stub.SubmitReview(cy, timeout=TIMEOUT)
            await stub.WithdrawReview(
                pb.WithdrawReviewRequest(request_id=rid(), review_id=withdrawn.review.review_id),
                timeout=TIMEOUT,
            )
            await answer(stub, case_id, "bob", 1)
            detail = await stub.GetCase(pb.GetCaseRequest(case_id=case_id), timeout=TIMEOUT)
            await decide_and_freeze(stub, case_id, True, 1)
            result = await stub.ComputeAgreement(pb.ComputeAgreementRequest(), timeout=TIMEOUT)
        assert len(detail.reviews) == 5
        (shown,) = detail.round_agreements
        assert (shown.review_count, shown.agreeing_count, shown.pairwise_agreement) == (2, 2, 1.0)
        counted = {r.reviewer_id: r.gold_agreement.case_count for r in result.reviewers}
        assert counted == {"ann": 1, "bob": 1}
        assert result.percent_agreement.case_count == 1

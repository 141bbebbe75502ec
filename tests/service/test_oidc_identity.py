"""The services trusting a real OpenID Connect provider (oidc-provider-mock, its own
process) by its JWKS URL: ID tokens from its real code flow are accepted for the configured
audience only, and alice, whose provider subject is no valid reviewer id, reviews as the
reviewer id the policy binds to it, and no one else may."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import gold_pb2
from tests.service.adjudication_support import case_message, failure, rid
from tests.support.oidc import ALICE, Provider, oidc_provider, oidc_stack

TIMEOUT = 20.0


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with oidc_provider() as running:
        yield running


class TestProviderIdentity:
    async def test_a_provider_subject_reviews_as_its_bound_reviewer_id(
        self, tmp_path: Path, provider: Provider
    ) -> None:
        """Registering alice binds her to the provider subject; that subject's ID token
        lists alice's queue and submits as alice; bob may not act as alice."""
        async with oidc_stack(tmp_path, provider) as stack, stack.channel("adjudication") as ch:
            stub = adj_grpc.AdjudicationServiceStub(ch)
            operator = stack.auth("operator")
            registered = await stub.RegisterReviewer(
                adj.RegisterReviewerRequest(
                    request_id=rid(),
                    reviewer=adj.Reviewer(reviewer_id="alice", kind=gold_pb2.REVIEWER_KIND_HUMAN),
                ),
                metadata=operator,
                timeout=TIMEOUT,
            )
            assert registered.reviewer.identity_subject == ALICE
            assert registered.reviewer.identity_issuer == provider.issuer
            case = await stub.EnqueueCase(
                adj.EnqueueCaseRequest(request_id=rid(), case=case_message(tenant="acme")),
                metadata=operator,
                timeout=TIMEOUT,
            )
            alice = stack.auth("alice")
            queue = await stub.ListQueue(
                adj.ListQueueRequest(reviewer_id="alice"), metadata=alice, timeout=TIMEOUT
            )
            assert [c.case_id for c in queue.cases] == [case.case.case_id]
            review = adj.SubmitReviewRequest(
                request_id=rid(),
                case_id=case.case.case_id,
                reviewer_id="alice",
                outcome=adj.REVIEW_OUTCOME_LABEL,
            )
            review.label.string_value = "key"
            refused = await failure(
                stub.SubmitReview(review, metadata=stack.auth("bob"), timeout=TIMEOUT)
            )
            assert refused.reason == "ERROR_REASON_IDENTITY_MISMATCH"
            submitted = await stub.SubmitReview(review, metadata=alice, timeout=TIMEOUT)
            assert submitted.review.reviewer_id == "alice"

    async def test_a_token_for_another_client_is_refused(
        self, tmp_path: Path, provider: Provider
    ) -> None:
        """An ID token the same provider issued to another client id (audience) is not a
        credential for these services."""
        async with oidc_stack(tmp_path, provider) as stack, stack.channel("adjudication") as ch:
            stub = adj_grpc.AdjudicationServiceStub(ch)
            other = provider.id_token("operator", client_id="someone-else")
            refused = await failure(
                stub.ListReviewers(
                    adj.ListReviewersRequest(),
                    metadata=(("authorization", f"Bearer {other}"),),
                    timeout=TIMEOUT,
                )
            )
            assert refused.code is grpc.StatusCode.UNAUTHENTICATED
            assert refused.reason == "ERROR_REASON_CREDENTIALS_INVALID"

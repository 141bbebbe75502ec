"""A case keeps the claims it was raised from, through real servers on both engines: stored
and digested with the case, shown to operators, never to reviewers, each bad field named,
and an edited claim in the database refused as tampering."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.v1 import adjudication_service_pb2 as pb
from tests.service.adjudication_support import (
    TIMEOUT,
    adjudication_server,
    case_message,
    failure,
)
from tests.service.tamper_sql import tampering
from tests.service.test_adjudication_security import assert_refused


def with_claims(*claims: tuple[str, Any, float], rate: float = 0.0) -> pb.Case:
    message = case_message()
    for i, (kind, value, confidence) in enumerate(claims):
        claim = message.claims.add(
            claim_id=f"c{i}", source_kind=kind, confidence=confidence, correlation_group="g"
        )
        if value is not None:
            claim.value.string_value = value
    message.spot_check_rate = rate
    return message


async def enqueue(stub: Any, message: pb.Case) -> pb.Case:
    reply = await stub.EnqueueCase(
        pb.EnqueueCaseRequest(case=message, request_id=""), timeout=TIMEOUT
    )
    case: pb.Case = reply.case
    return case


class TestClaimsKept:
    async def test_stored_digested_and_shown_to_operators_only(self, adjudication_db: str) -> None:
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            sent = with_claims(("documentation", "key", 0.9), ("llm_inference", "none", 0.5))
            sent.spot_check_rate = 0.1
            stored = await enqueue(stub, sent)
            assert [(c.source_kind, c.value.string_value) for c in stored.claims] == [
                ("documentation", "key"),
                ("llm_inference", "none"),
            ]
            assert stored.spot_check_rate == pytest.approx(0.1)
            read = await stub.GetCase(pb.GetCaseRequest(case_id=stored.case_id), timeout=TIMEOUT)
            assert list(read.case.claims) == list(stored.claims)
            assert read.case.content_digest == stored.content_digest
            blinded = await stub.GetBlindedCase(
                pb.GetBlindedCaseRequest(case_id=stored.case_id), timeout=TIMEOUT
            )
            assert "documentation" not in str(blinded)
            plain = await enqueue(stub, case_message())
            assert plain.content_digest != stored.content_digest
            verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest(), timeout=TIMEOUT)
            assert verdict.ok, verdict

    @pytest.mark.parametrize(
        ("claim", "rate", "field"),
        [
            (("", "key", 0.5), 0.0, "case.claims[0].source_kind"),
            (("has space", "key", 0.5), 0.0, "case.claims[0].source_kind"),
            (("documentation", None, 0.5), 0.0, "case.claims[0].value"),
            (("documentation", "key", 1.5), 0.0, "case.claims[0].confidence"),
            (("documentation", "key", float("nan")), 0.0, "case.claims[0].confidence"),
            (("documentation", "key", 0.5), 1.5, "case.spot_check_rate"),
            (("documentation", "key", 0.5), -0.1, "case.spot_check_rate"),
        ],
    )
    async def test_a_bad_claim_is_named(
        self, adjudication_db: str, claim: tuple[str, Any, float], rate: float, field: str
    ) -> None:
        async with adjudication_server(adjudication_db) as server:
            error = await failure(enqueue(server.stub, with_claims(claim, rate=rate)))
            assert_refused(error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", field)

    async def test_too_many_claims_are_one_violation(self, adjudication_db: str) -> None:
        async with adjudication_server(adjudication_db) as server:
            many = with_claims(*[("documentation", "key", 0.5)] * 257)
            error = await failure(enqueue(server.stub, many))
            assert_refused(error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", "case.claims")

    async def test_an_edited_claim_is_tampering(self, adjudication_db: str, tmp_path: Path) -> None:
        """A claim's source kind changed in the database: the case no longer matches its
        content digest, so reading it is DATA_LOSS and the chain walk names it."""
        async with adjudication_server(adjudication_db) as server:
            stored = await enqueue(server.stub, with_claims(("documentation", "key", 0.9)))
            with tampering(adjudication_db) as raw:
                changed = raw.execute(
                    "UPDATE cases SET claims = replace(claims, 'documentation', 'human_review') "
                    "WHERE case_id = ?",
                    stored.case_id,
                )
                assert changed == 1
            error = await failure(
                server.stub.GetCase(pb.GetCaseRequest(case_id=stored.case_id), timeout=TIMEOUT)
            )
            assert error.code == grpc.StatusCode.DATA_LOSS
            verdict = await server.stub.VerifyAuditChain(
                pb.VerifyAuditChainRequest(), timeout=TIMEOUT
            )
            assert not verdict.ok
            assert verdict.bad_record_kind == pb.RECORD_KIND_CASE
            assert verdict.bad_record_id == stored.case_id

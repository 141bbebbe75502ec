"""A proposed reliability table goes through an approval, then to a running resolver.

Through the secure stack (TLS, real ES256 tokens, real servers) on each engine, and a real
resolver serving ``--reliability-table``: the operator asks with ``assay calibrate
request``, cannot approve its own request, two distinct approvers grant it (the default
``table_change_quorum`` is two), ``assay calibrate apply`` consumes it and writes the
table, and the resolver names the new digest. Refused: applying before the grant, another
table (APPROVAL_CANDIDATE_MISMATCH), a second apply (consumed), bad requests by field.
The ledger's events carry the table digest; an edited table is DATA_LOSS on read, fails
the audit chain, and fails the export's offline proof naming ``tableChange``.

Principals: ``operator`` requests; ``dave`` and ``erin`` approve for acme; ``both`` holds
operator and approver for acme.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.cli.main import main as cli
from assay.reliability_table import table_digest
from assay.runtime.auth.dev_credentials import Grantee
from assay.runtime.server import serving
from assay.services.registry import ServeOptions
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY
from assay.services.resolver.service import build_spec
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import approval_service_pb2_grpc as pb_grpc
from assay.v1 import resolver_service_pb2 as rpb
from assay.v1 import resolver_service_pb2_grpc as rpb_grpc
from tests.service import tamper_sql
from tests.service.adjudication_support import failure, is_postgres, rid
from tests.service.test_approvals import PRINCIPALS, As
from tests.support.approvals import candidate
from tests.support.eventually import eventually_async
from tests.support.secure import SecureStack, secure_stack

TIMEOUT = 20.0
BOTH = (*PRINCIPALS, Grantee("both", ("operator", "approver"), ("acme",)))
# The proposal: ci_status measured lower than declared, with a calibration member the
# digest leaves out.
PROPOSED = {**DEFAULT_RELIABILITY, "ci_status": 0.7}
OTHER = {**DEFAULT_RELIABILITY, "ci_status": 0.6}


def proposal_text(table: dict[str, float], tree_size: int = 42) -> str:
    evidence = {"format": "assay.calibration.v1", "checkpoint": {"tree_size": tree_size}}
    return json.dumps({"sources": table, "calibration": evidence}, sort_keys=True) + "\n"


@dataclass
class World:
    stack: SecureStack
    approvals: pb_grpc.ApprovalServiceStub
    adjudication: adj_grpc.AdjudicationServiceStub
    resolver: rpb_grpc.ResolverServiceStub
    db: str
    table: Path  # the resolver's --reliability-table

    def as_(self, name: str) -> As:
        return As(self.approvals, self.stack.auth(name))

    def flags(self, who: str) -> list[str]:
        root = self.stack.creds.root
        return [
            "--target",
            self.stack.target("adjudication"),
            "--ca",
            str(root / "ca.pem"),
            "--token-file",
            str(root / "tokens" / f"{who}.jwt"),
        ]

    async def calibrate(self, who: str, *args: str) -> int:
        code: int = await asyncio.to_thread(cli, ["calibrate", *args, *self.flags(who)])
        return code

    async def decide(self, approval_id: str, who: str) -> pb.Approval:
        reply = await self.as_(who).DecideApproval(
            pb.DecideApprovalRequest(
                approval_id=approval_id,
                decision=pb.APPROVAL_DECISION_APPROVE,
                reason=f"{who} read the evidence",
                request_id=rid(),
            )
        )
        approval: pb.Approval = reply.approval
        return approval

    async def events(self) -> list[adj.AuditEvent]:
        reply = await self.adjudication.ListAuditEvents(
            adj.ListAuditEventsRequest(page_size=1000),
            metadata=self.stack.auth("operator"),
            timeout=TIMEOUT,
        )
        return list(reply.events)

    async def resolver_digest(self) -> str:
        reply = await self.resolver.GetResolverPolicy(
            rpb.GetResolverPolicyRequest(), timeout=TIMEOUT
        )
        return str(reply.reliability_table_digest)


@pytest.fixture(autouse=True)
def quiet_server(log_stream: io.StringIO) -> io.StringIO:
    """The servers' log lines go to a buffer: stdout holds only the commands' output."""
    return log_stream


@contextlib.asynccontextmanager
async def world(tmp_path: Path, db: str) -> AsyncIterator[World]:
    """The secure stack (no ``table_change_quorum`` set: the default) and a resolver whose
    table file holds the builtin table."""
    postgres = db if is_postgres(db) else None
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"sources": dict(DEFAULT_RELIABILITY)}))
    spec = await build_spec(ServeOptions(port=0, reliability_table=str(table)))
    async with (
        secure_stack(tmp_path, True, BOTH, db=postgres, approvals="[approvals]\n") as stack,
        stack.channel("adjudication") as channel,
        serving([spec]) as resolver,
        grpc.aio.insecure_channel(resolver[0].address) as resolver_channel,
    ):
        yield World(
            stack,
            pb_grpc.ApprovalServiceStub(channel),
            adj_grpc.AdjudicationServiceStub(channel),
            rpb_grpc.ResolverServiceStub(resolver_channel),
            db if postgres else str(tmp_path / "assay.db"),
            table,
        )


def partials(folder: Path) -> list[str]:
    """Temporary files a write left behind."""
    return [p.name for p in folder.iterdir() if p.name.endswith(".partial")]


def edit_exported_table(lines: Path) -> str:
    """Raise ``ci_status`` in the one exported approval's table; the digest it names."""
    line = json.loads(lines.read_text())
    line["tableChange"]["sources"]["ci_status"] = 0.95
    lines.write_text(json.dumps(line) + "\n")
    return str(line["tableChange"]["tableDigest"])


def reason_of(error: Any) -> str:
    return str(error.reason).removeprefix("ERROR_REASON_")


def change(table: dict[str, float], digest: str = "") -> adj.ReliabilityTableChange:
    return adj.ReliabilityTableChange(
        table_digest=digest or table_digest(table), sources=table, tree_size=42
    )


async def requested(w: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``assay calibrate request`` by the operator for PROPOSED; the approval id printed."""
    proposal = tmp_path / "proposal.json"
    proposal.write_text(proposal_text(PROPOSED))
    capsys.readouterr()
    code = await w.calibrate(
        "operator", "request", str(proposal), "--tenant", "acme", "--reason", "spot-checks"
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out.strip()


class TestFromProposalToUse:
    async def test_request_two_approvers_apply_and_the_resolver_names_the_table(
        self, tmp_path: Path, adjudication_db: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            builtin = await w.resolver_digest()
            new = table_digest(PROPOSED)
            approval_id = await requested(w, tmp_path, capsys)
            proposal = tmp_path / "proposal.json"
            got = (
                await w.as_("dave").GetApproval(pb.GetApprovalRequest(approval_id=approval_id))
            ).approval
            assert (got.quorum, got.table_change.table_digest) == (2, new)
            assert dict(got.table_change.sources) == PROPOSED
            assert got.table_change.tree_size == 42
            assert not got.HasField("candidate")
            # What an approver reads: the digest and every entry.
            show = ["approval", "show", approval_id, *w.flags("dave")]
            assert await asyncio.to_thread(cli, show) == 0
            shown = capsys.readouterr().out
            assert new in shown
            assert "ci_status = 0.7" in shown
            # The requester holds no approver role; and one that holds it is refused by name.
            refused = await failure(w.decide(approval_id, "operator"))
            assert refused.code is grpc.StatusCode.PERMISSION_DENIED
            assert (await w.decide(approval_id, "dave")).state == pb.APPROVAL_STATE_PENDING

            async def apply(file: Path) -> tuple[int, str]:
                capsys.readouterr()
                code = await w.calibrate(
                    "operator",
                    "apply",
                    str(file),
                    "--approval",
                    approval_id,
                    "--table",
                    str(w.table),
                )
                out = capsys.readouterr()
                return code, out.out + out.err

            before = w.table.read_bytes()
            code, said = await apply(proposal)  # one approver of two: not granted
            assert code == 1
            assert "APPROVAL_NOT_GRANTED" in said
            assert (await w.decide(approval_id, "erin")).state == pb.APPROVAL_STATE_GRANTED
            other = tmp_path / "other.json"
            other.write_text(proposal_text(OTHER))
            code, said = await apply(other)
            assert code == 1
            assert "APPROVAL_CANDIDATE_MISMATCH" in said
            assert w.table.read_bytes() == before  # a refusal leaves the table as it was
            assert partials(tmp_path) == []

            code, said = await apply(proposal)
            assert code == 0, said
            assert f"old {builtin}" in said
            assert f"new {new}" in said
            assert w.table.read_text() == proposal.read_text()
            assert w.table.stat().st_mode & 0o777 == 0o600

            async def resolver_names_it() -> bool:
                return await w.resolver_digest() == new

            await eventually_async(resolver_names_it, message="the resolver names the new table")
            code, said = await apply(proposal)
            assert code == 1
            assert "APPROVAL_ALREADY_CONSUMED" in said

            events = (await w.events())[-5:]
            assert [adj.AuditEventType.Name(e.event_type) for e in events] == [
                "AUDIT_EVENT_TYPE_APPROVAL_REQUESTED",
                "AUDIT_EVENT_TYPE_APPROVAL_DECIDED",
                "AUDIT_EVENT_TYPE_APPROVAL_DECIDED",
                "AUDIT_EVENT_TYPE_APPROVAL_GRANTED",
                "AUDIT_EVENT_TYPE_APPROVAL_CONSUMED",
            ]
            assert [e.actor.subject for e in events] == [
                "operator",
                "dave",
                "erin",
                "erin",
                "operator",
            ]
            digests = [e.payload.get("candidate_digest") for e in events]
            assert (digests[0], digests[-1]) == (new, new)
            verdict = await w.adjudication.VerifyAuditChain(
                adj.VerifyAuditChainRequest(), metadata=w.stack.auth("operator"), timeout=TIMEOUT
            )
            assert verdict.ok, verdict

    async def test_a_requester_who_approves_is_refused_by_name(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            asked = await w.as_("both").RequestApproval(
                pb.RequestApprovalRequest(
                    tenant="acme", table_change=change(PROPOSED), reason="r", request_id=rid()
                )
            )
            refused = await failure(w.decide(asked.approval.approval_id, "both"))
            assert (refused.code, reason_of(refused)) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "APPROVER_IS_REQUESTER",
            )


class TestBadInput:
    @pytest.mark.parametrize(
        ("field", "extra"),
        [
            ("table_change", {"table_change": change(PROPOSED), "candidate": candidate()}),
            ("candidate", {}),
            (
                "table_change.table_digest",
                {"table_change": change(PROPOSED, digest=table_digest(OTHER))},
            ),
            (
                "table_change.sources",
                {"table_change": change({**PROPOSED, "ci_status": 1.5}, digest="sha256:x")},
            ),
            ("table_change.sources", {"table_change": change({}, digest="sha256:x")}),
            ("subject", {"table_change": change(PROPOSED), "subject": "payments-api"}),
        ],
    )
    async def test_a_bad_request_is_refused_naming_the_field(
        self, tmp_path: Path, field: str, extra: dict[str, Any]
    ) -> None:
        async with world(tmp_path, str(tmp_path / "a.db")) as w:
            refused = await failure(
                w.as_("operator").RequestApproval(
                    pb.RequestApprovalRequest(
                        tenant="acme", reason="spot-checks", request_id=rid(), **extra
                    )
                )
            )
            assert refused.code is grpc.StatusCode.INVALID_ARGUMENT
            assert field in [v.field for v in refused.violations], refused

    async def test_a_file_that_is_no_table_is_refused_before_any_call(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        async with world(tmp_path, str(tmp_path / "a.db")) as w:
            bad = tmp_path / "bad.json"
            bad.write_text(json.dumps({"sources": {"ci_status": 2}}))
            code = await w.calibrate(
                "operator", "request", str(bad), "--tenant", "acme", "--reason", "r"
            )
            assert code == 2
            assert "sources.ci_status" in capsys.readouterr().err
            listed = await w.as_("operator").ListApprovals(pb.ListApprovalsRequest())
            assert list(listed.approvals) == []


class TestTamper:
    async def test_an_edited_table_is_caught_on_read_in_the_chain_and_in_the_export(
        self, tmp_path: Path, adjudication_db: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            approval_id = await requested(w, tmp_path, capsys)
            await w.decide(approval_id, "dave")
            await w.decide(approval_id, "erin")
            export = tmp_path / "corpus.jsonl"
            args = ["export", "--approvals", "--out", str(export), *w.flags("operator")]
            assert await asyncio.to_thread(cli, args) == 0
            key = await w.adjudication.GetCheckpoint(
                adj.GetCheckpointRequest(), metadata=w.stack.auth("operator"), timeout=TIMEOUT
            )
            pem = tmp_path / "ledger.pub.pem"
            pem.write_text(key.public_key_pem)
            verify = ["audit", "verify-export", str(export), "--public-key", str(pem)]
            capsys.readouterr()
            assert cli(verify) == 0, capsys.readouterr().err
            proven = capsys.readouterr().out
            assert f"{approval_id} (acme): table {table_digest(PROPOSED)} requested by" in proven
            # The export's table edited: the proof fails naming the approval and tableChange.
            assert edit_exported_table(Path(f"{export}.approvals.jsonl")) == table_digest(PROPOSED)
            assert cli(verify) == 3
            assert f"approval {approval_id}: tableChange" in capsys.readouterr().err
            # The stored table edited: DATA_LOSS on read, the chain fails, no apply.
            tamper_sql.edit(
                w.db,
                "UPDATE approvals SET candidate_detail = replace(candidate_detail, '0.7', "
                "'0.95') WHERE approval_id = ?",
                approval_id,
            )
            lost = await failure(
                w.as_("operator").GetApproval(pb.GetApprovalRequest(approval_id=approval_id))
            )
            assert (lost.code, lost.metadata["record"]) == (grpc.StatusCode.DATA_LOSS, "approval")
            verdict = await w.adjudication.VerifyAuditChain(
                adj.VerifyAuditChainRequest(), metadata=w.stack.auth("operator"), timeout=TIMEOUT
            )
            assert not verdict.ok
            assert approval_id in verdict.detail
            use = pb.ConsumeApprovalRequest(
                approval_id=approval_id, candidate_digest=table_digest(PROPOSED), request_id=rid()
            )
            refused = await failure(w.as_("operator").ConsumeApproval(use))
            assert refused.code is grpc.StatusCode.DATA_LOSS

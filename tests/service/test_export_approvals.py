"""``assay export --approvals`` and ``assay audit verify-export`` through the secure stack
(TLS, real ES256 tokens), on each engine: approvals made with real tokens are exported with
their ledger events and proven offline against the signed checkpoint, reporting who asked,
who decided and who used each; one field edited in the approvals file fails with exit 3,
naming the approval and the field; an auditor of another tenant exports none of acme's.

Approvals: ``used`` (operator asks, dave approves, operator consumes), ``denied`` (dave
denies), ``revoked`` (operator withdraws it pending), all acme; ``globex`` (gloria asks,
gina approves).
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.cli.main import main as cli
from assay.runtime.logging import configure_logging
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import approval_service_pb2_grpc as pb_grpc
from tests.service import tamper_sql
from tests.service.adjudication_support import is_postgres, rid
from tests.service.test_approvals import POLICY, PRINCIPALS, As, world
from tests.support.approvals import PREDICATE, SUBJECT, candidate
from tests.support.secure import SecureStack, secure_stack

TIMEOUT = 20.0


@dataclass(frozen=True)
class Made:
    directory: Path
    public_key: Path
    ids: dict[str, str]  # approval id by name
    lines: dict[str, dict[str, Any]]  # the operator's export, by approval name
    gloria: list[dict[str, Any]]  # globex's auditor's export


def flags(stack: SecureStack, who: str) -> list[str]:
    root = stack.creds.root
    return [
        "--target",
        stack.target("adjudication"),
        "--ca",
        str(root / "ca.pem"),
        "--token-file",
        str(root / "tokens" / f"{who}.jwt"),
    ]


async def _approvals(stack: SecureStack) -> dict[str, str]:
    async with stack.channel("adjudication") as channel:
        stub = pb_grpc.ApprovalServiceStub(channel)

        def as_(who: str) -> As:
            return As(stub, stack.auth(who))

        async def ask(by: str = "operator", tenant: str = "acme") -> str:
            reply = await as_(by).RequestApproval(
                pb.RequestApprovalRequest(
                    tenant=tenant,
                    subject=SUBJECT,
                    predicate=PREDICATE,
                    candidate=candidate(),
                    reason=f"{by} needs CI status",
                    request_id=rid(),
                )
            )
            return str(reply.approval.approval_id)

        async def decide(approval_id: str, who: str, approve: bool = True) -> None:
            decision = pb.APPROVAL_DECISION_APPROVE if approve else pb.APPROVAL_DECISION_DENY
            await as_(who).DecideApproval(
                pb.DecideApprovalRequest(
                    approval_id=approval_id,
                    decision=decision,
                    reason=f"{who} looked",
                    request_id=rid(),
                )
            )

        ids = {"used": await ask()}
        await decide(ids["used"], "dave")
        await as_("operator").ConsumeApproval(
            pb.ConsumeApprovalRequest(
                approval_id=ids["used"],
                candidate_digest=candidate().candidate_digest,
                request_id=rid(),
            )
        )
        ids["denied"] = await ask()
        await decide(ids["denied"], "dave", approve=False)
        ids["revoked"] = await ask()
        await as_("operator").RevokeApproval(
            pb.RevokeApprovalRequest(
                approval_id=ids["revoked"], reason="not needed now", request_id=rid()
            )
        )
        ids["globex"] = await ask("gloria", "globex")
        await decide(ids["globex"], "gina")
        key = await adj_grpc.AdjudicationServiceStub(channel).GetCheckpoint(
            adj.GetCheckpointRequest(), metadata=stack.auth("operator"), timeout=TIMEOUT
        )
    return ids | {"pem": key.public_key_pem}


async def _make(directory: Path, db: str) -> Made:
    postgres = db if is_postgres(db) else None
    async with secure_stack(directory, True, PRINCIPALS, db=postgres, approvals=POLICY) as stack:
        ids = await _approvals(stack)
        for who in ("operator", "gloria"):
            out = directory / f"{who}.jsonl"
            args = ["export", "--approvals", "--out", str(out), *flags(stack, who)]
            assert await asyncio.to_thread(cli, args) == 0
    pem = directory / "ledger.pub.pem"
    pem.write_text(ids.pop("pem"))
    names = {v: k for k, v in ids.items()}
    mine = directory / "operator.jsonl.approvals.jsonl"
    lines = [json.loads(line) for line in mine.read_text().splitlines()]
    theirs = (directory / "gloria.jsonl.approvals.jsonl").read_text().splitlines()
    return Made(
        directory,
        pem,
        ids,
        {names[line["approvalId"]]: line for line in lines},
        [json.loads(line) for line in theirs],
    )


@pytest.fixture(scope="module")
def made(module_db: str, tmp_path_factory: pytest.TempPathFactory) -> Made:
    """The four approvals on one stack per engine, exported by the operator (every tenant)
    and by gloria (globex's auditor), shared by the module (each test edits a copy)."""
    configure_logging("info", io.StringIO())  # the server's log lines stay out of the output
    return asyncio.run(_make(tmp_path_factory.mktemp("approvals"), module_db))


def verify(made: Made, corpus: str = "operator.jsonl", *extra: str) -> int:
    path = made.directory / corpus
    return cli(["audit", "verify-export", str(path), "--public-key", str(made.public_key), *extra])


def tampered(made: Made, tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """The operator's export with ``change`` applied to ``used``'s line, in ``tmp_path``."""
    for suffix in ("", ".manifest.json"):
        source = made.directory / f"operator.jsonl{suffix}"
        (tmp_path / f"corpus.jsonl{suffix}").write_bytes(source.read_bytes())
    lines = []
    for name, line in made.lines.items():
        line = copy.deepcopy(line)
        if name == "used":
            change(line)
        lines.append(json.dumps(line))
    (tmp_path / "corpus.jsonl.approvals.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path / "corpus.jsonl"


def later(approval: dict[str, Any], step: int | None = None) -> str:
    """The approval's request time, or a step's time, one microsecond later."""
    given = approval["requestTime"] if step is None else approval["steps"][step]["occurTime"]
    moment = datetime.fromisoformat(given.replace("Z", "+00:00")) + timedelta(microseconds=1)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class TestExport:
    def test_every_approval_of_the_callers_tenants_with_its_events(self, made: Made) -> None:
        """The operator's export holds all four, each step with its event, the outcome's event
        where one was caused; the file is owner-only."""
        assert set(made.lines) == {"used", "denied", "revoked", "globex"}
        used = made.lines["used"]
        assert used["requester"]["subject"] == "operator"
        assert [(s["kind"], s["actor"]["subject"]) for s in used["steps"]] == [
            ("APPROVED", "dave"),
            ("CONSUMED", "operator"),
        ]
        assert used["decided"]["event"]["eventType"] == "AUDIT_EVENT_TYPE_APPROVAL_GRANTED"
        assert made.lines["denied"]["decided"]["event"]["eventType"].endswith("APPROVAL_DENIED")
        assert "decided" not in made.lines["revoked"]
        manifest = json.loads((made.directory / "operator.jsonl.manifest.json").read_text())
        assert manifest["approvalCount"] == "4"
        mode = (made.directory / "operator.jsonl.approvals.jsonl").stat().st_mode & 0o777
        assert mode == 0o600

    def test_an_auditor_of_another_tenant_exports_none_of_acmes(self, made: Made) -> None:
        """gloria audits globex only: her export holds globex's approval and no other."""
        assert [line["approvalId"] for line in made.gloria] == [made.ids["globex"]]


class TestVerify:
    def test_untouched_exports_verify_and_say_who_allowed_what(
        self, made: Made, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Both exports verify; the report names the requester, the deciders and the user."""
        assert verify(made) == 0
        out = capsys.readouterr().out
        used = next(line for line in out.splitlines() if made.ids["used"] in line)
        assert "requested by" in used
        assert "operator" in used
        assert "approved by" in used
        assert "dave" in used
        assert "granted" in used
        assert "used by" in used
        denied = next(line for line in out.splitlines() if made.ids["denied"] in line)
        assert "denied by" in denied
        assert "; denied" in denied
        assert verify(made, "gloria.jsonl") == 0
        assert "gina" in capsys.readouterr().out

    def test_json_lists_each_approval(self, made: Made, capsys: pytest.CaptureFixture[str]) -> None:
        """``--json`` gives each approval's requester, decisions and outcome."""
        assert verify(made, "operator.jsonl", "--json") == 0
        found = {a["approvalId"]: a for a in json.loads(capsys.readouterr().out)["approvals"]}
        used = found[made.ids["used"]]
        assert used["requester"].endswith(" operator")
        assert [(d["kind"], d["actor"].split()[-1]) for d in used["decisions"]] == [
            ("APPROVED", "dave")
        ]
        assert (used["outcome"], used["consumedBy"].split()[-1]) == ("GRANTED", "operator")

    @pytest.mark.parametrize(
        ("field", "change"),
        [
            ("requester", lambda a: a["requester"].update(subject="dave")),
            ("steps[0].actor", lambda a: a["steps"][0]["actor"].update(subject="erin")),
            ("steps[1].actor", lambda a: a["steps"][1]["actor"].update(subject="dave")),
            ("steps[0].reason", lambda a: a["steps"][0].update(reason="dave did not look")),
            ("steps[0].kind", lambda a: a["steps"][0].update(kind="DENIED")),
            ("steps[1].kind", lambda a: a["steps"][1].update(kind="REVOKED")),
            ("steps[1].step", lambda a: a["steps"][1].update(step=3)),
            ("steps[1].occurTime", lambda a: a["steps"][1].update(occurTime=later(a, 1))),
            ("requestTime", lambda a: a.update(requestTime=later(a))),
            ("reason", lambda a: a.update(reason="nobody asked")),
            ("subject", lambda a: a.update(subject="other-api")),
            ("grantLifetime", lambda a: a.update(grantLifetime="86400s")),
            ("quorum", lambda a: a.update(quorum=2)),
            ("tenant", lambda a: a.update(tenant="globex")),
            ("candidate.probe", lambda a: a["candidate"].update(probe="PROBE_KIND_RERUN_TEST")),
            ("approvalDigested", lambda a: a.update(approvalDigested="{}")),
            ("decided", lambda a: a.pop("decided")),
            (
                "requested.event.payload.content",
                lambda a: a["requested"]["event"]["payload"].update(content="sha256:" + "0" * 64),
            ),
            (
                "steps[0].event.inclusionPath",
                lambda a: a["steps"][0]["event"]["inclusionPath"].pop(),
            ),
        ],
    )
    def test_an_edited_field_fails_naming_the_approval_and_the_field(
        self,
        made: Made,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        field: str,
        change: Callable[[dict[str, Any]], None],
    ) -> None:
        """One field of ``used`` changed: exit 3, the message names the approval and field."""
        corpus = tampered(made, tmp_path, change)
        code = cli(["audit", "verify-export", str(corpus), "--public-key", str(made.public_key)])
        err = capsys.readouterr().err
        assert code == 3, err
        assert f"approval {made.ids['used']}: {field}:" in err

    def test_a_missing_approval_fails_against_the_manifests_count(
        self, made: Made, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An approval dropped from the file disagrees with the manifest's count."""
        corpus = tampered(made, tmp_path, lambda a: None)
        approvals = tmp_path / "corpus.jsonl.approvals.jsonl"
        approvals.write_text("\n".join(approvals.read_text().splitlines()[1:]) + "\n")
        assert (
            cli(["audit", "verify-export", str(corpus), "--public-key", str(made.public_key)]) == 3
        )
        assert "but the manifest declares 4" in capsys.readouterr().err


class TestCheckedOnRead:
    async def test_an_edited_approval_row_ends_the_export_with_data_loss(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """A request's reason edited in the database: an export with approvals stops with
        DATA_LOSS naming the approval (no manifest); one without them never reads it."""
        async with world(tmp_path, adjudication_db) as w:
            asked = await w.request()
            tamper_sql.edit(
                w.db,
                "UPDATE approvals SET reason = ? WHERE approval_id = ?",
                "nobody asked",
                asked.approval_id,
            )
            auditor = w.stack.auth("operator")
            plain = w.adjudication.ExportCorpus(
                adj.ExportCorpusRequest(), metadata=auditor, timeout=TIMEOUT
            )
            assert [m.WhichOneof("item") async for m in plain] == ["manifest"]
            stream = w.adjudication.ExportCorpus(
                adj.ExportCorpusRequest(include_approvals=True), metadata=auditor, timeout=TIMEOUT
            )
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                _ = [m async for m in stream]
            assert caught.value.code() is grpc.StatusCode.DATA_LOSS
            assert f"approval {asked.approval_id}" in str(caught.value.details())


class TestPaging:
    async def test_batches_of_one_carry_every_approval_once_newest_first(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """``batch_size`` 1: one approval per message, each once, newest request first, the
        manifest counting them, all after the records."""
        async with world(tmp_path, adjudication_db) as w:
            made = [(await w.request()).approval_id for _ in range(3)]
            request = adj.ExportCorpusRequest(include_approvals=True, batch_size=1)
            stream = w.adjudication.ExportCorpus(
                request, metadata=w.stack.auth("operator"), timeout=TIMEOUT
            )
            messages = [m async for m in stream]
        kinds = [m.WhichOneof("item") for m in messages]
        assert kinds == ["approvals"] * 3 + ["manifest"]
        got = [a.approval_id for m in messages[:3] for a in m.approvals.approvals]
        assert got == made[::-1]
        assert messages[-1].manifest.approval_count == 3

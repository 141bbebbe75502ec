"""The audit ledger as a transparency log, through a real server: signed checkpoints, inclusion
and consistency proofs that verify with the RFC 6962 verifiers, a key that survives restarts,
a rewritten history that does not verify, and bad sizes refused with the field named."""

from __future__ import annotations

import asyncio
import contextlib
import stat
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import grpc
import pytest

from assay.client import AdjudicationClient, AsyncAdjudicationClient
from assay.runtime.server import serving
from assay.services.adjudication.service import build_spec
from assay.services.adjudication.use_cases.transparency import origin_for
from assay.services.registry import ServeOptions
from assay.tlog.checkpoint import (
    Checkpoint,
    load_or_create_signing_key,
    parse_signed_checkpoint,
)
from assay.tlog.merkle import verify_consistency, verify_inclusion
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc
from tests.service.adjudication_support import TIMEOUT, failure, is_postgres, ledger_key, register
from tests.service.tamper_sql import edit


@contextlib.asynccontextmanager
async def server(
    db: str | Path, key: Path | None = None
) -> AsyncIterator[pb_grpc.AdjudicationServiceStub]:
    """A real server over ``db``; its ledger key ``key``, else ``ledger_key(db)`` (beside a
    SQLite file, the default)."""
    if key is None and is_postgres(db):
        key = ledger_key(db)
    spec = await build_spec(ServeOptions(port=0, db_path=str(db), ledger_signing_key=key))
    async with (
        serving([spec]) as running,
        grpc.aio.insecure_channel(running[0].address) as channel,
    ):
        yield pb_grpc.AdjudicationServiceStub(channel)


async def checkpoint(stub: pb_grpc.AdjudicationServiceStub, key_file: Path) -> Checkpoint:
    """The server's checkpoint, verified with the public half of ``key_file``."""
    reply = await stub.GetCheckpoint(pb.GetCheckpointRequest(), timeout=TIMEOUT)
    public = load_or_create_signing_key(key_file).public_key()
    found = parse_signed_checkpoint(reply.signed_note, public, origin_for(public))
    assert (found.origin, found.size, found.root) == (
        reply.origin,
        reply.tree_size,
        reply.root_hash,
    )
    return found


async def events(stub: pb_grpc.AdjudicationServiceStub) -> list[pb.AuditEvent]:
    reply = await stub.ListAuditEvents(pb.ListAuditEventsRequest(page_size=1000), timeout=TIMEOUT)
    return list(reply.events)


def leaf(event: pb.AuditEvent) -> bytes:
    return bytes.fromhex(event.hash.removeprefix("sha256:"))


class TestCheckpoints:
    async def test_signed_with_the_key_created_beside_the_database(self, tmp_path: Path) -> None:
        """The first start creates <db>.ledger-key.pem (0600); its key verifies the checkpoint.
        SQLite only: a key beside the file is SQLite's default; PostgreSQL requires
        --ledger-signing-key (tests/process/test_adjudication_engines)."""
        db = tmp_path / "assay.db"
        async with server(db) as stub:
            for n in range(3):
                await register(stub, f"fx-{n}")
            found = await checkpoint(stub, ledger_key(db))
            assert found.size == len(await events(stub)) >= 3
        mode = stat.S_IMODE(ledger_key(db).stat().st_mode)
        assert mode == 0o600

    async def test_a_restart_rebuilds_the_same_tree_under_the_same_origin(
        self, adjudication_db: str
    ) -> None:
        """The tree is rebuilt from the stored events: same key, origin, size and root."""
        db = adjudication_db
        async with server(db) as stub:
            await register(stub, "fx-a")
            before = await checkpoint(stub, ledger_key(db))
        async with server(db) as stub:
            after = await checkpoint(stub, ledger_key(db))
        assert after == before

    async def test_another_key_does_not_verify(self, tmp_path: Path, adjudication_db: str) -> None:
        """A checkpoint checked against a different key is refused."""
        async with server(adjudication_db) as stub:
            await register(stub, "fx-a")
            reply = await stub.GetCheckpoint(pb.GetCheckpointRequest(), timeout=TIMEOUT)
        other = load_or_create_signing_key(tmp_path / "other.pem").public_key()
        with pytest.raises(ValueError, match="no signature"):
            parse_signed_checkpoint(reply.signed_note, other, reply.origin)


class TestProofs:
    async def test_every_event_is_included_in_the_checkpoint(self, adjudication_db: str) -> None:
        """Each event's inclusion proof verifies against the signed root; a wrong leaf fails."""
        db = adjudication_db
        async with server(db) as stub:
            for n in range(6):
                await register(stub, f"fx-{n}")
            found = await checkpoint(stub, ledger_key(db))
            listed = await events(stub)
            assert len(listed) == found.size
            for event in listed:
                request = pb.GetInclusionProofRequest(sequence=event.sequence)
                proof = await stub.GetInclusionProof(request, timeout=TIMEOUT)
                assert (proof.leaf_index, proof.tree_size) == (event.sequence - 1, found.size)
                args = (proof.leaf_index, proof.tree_size, list(proof.hashes), found.root)
                assert verify_inclusion(leaf(event), *args)
                assert not verify_inclusion(b"\x00" * 32, *args)

    async def test_an_old_checkpoint_is_consistent_with_a_later_one(
        self, adjudication_db: str
    ) -> None:
        """A saved checkpoint and a later one are linked by the consistency proof, and an old
        tree size's inclusion proofs verify against the old root."""
        db = adjudication_db
        async with server(db) as stub:
            await register(stub, "fx-a")
            await register(stub, "fx-b")
            old = await checkpoint(stub, ledger_key(db))
            for n in range(5):
                await register(stub, f"fx-late-{n}")
            new = await checkpoint(stub, ledger_key(db))
            request = pb.GetConsistencyProofRequest(first_size=old.size)
            proof = await stub.GetConsistencyProof(request, timeout=TIMEOUT)
            first = (await events(stub))[0]
            path = await stub.GetInclusionProof(
                pb.GetInclusionProofRequest(sequence=1, tree_size=old.size), timeout=TIMEOUT
            )
        assert new.size > old.size
        assert proof.second_size == new.size
        assert verify_consistency(old.size, new.size, old.root, new.root, list(proof.hashes))
        assert verify_inclusion(leaf(first), 0, old.size, list(path.hashes), old.root)

    async def test_a_rewritten_history_is_not_consistent(
        self, tmp_path: Path, new_db: Callable[[str], str]
    ) -> None:
        """A log with the same key but other events cannot prove it extends the saved one."""
        key = tmp_path / "ledger.pem"
        async with server(new_db("a"), key) as stub:
            await register(stub, "fx-a")
            await register(stub, "fx-b")
            old = await checkpoint(stub, key)
        async with server(new_db("b"), key) as stub:
            for n in range(4):
                await register(stub, f"fx-other-{n}")
            new = await checkpoint(stub, key)
            request = pb.GetConsistencyProofRequest(first_size=old.size, second_size=new.size)
            proof = await stub.GetConsistencyProof(request, timeout=TIMEOUT)
        assert old.origin == new.origin, "same key, same log name"
        assert not verify_consistency(old.size, new.size, old.root, new.root, list(proof.hashes))


class TestDamagedLedger:
    async def test_a_gap_stops_the_tree_and_the_server_still_starts(
        self, adjudication_db: str
    ) -> None:
        """With event 3 deleted the log serves the two before it and never skips ahead."""
        db = adjudication_db
        async with server(db) as stub:
            for n in range(5):
                await register(stub, f"fx-{n}")
            whole = await checkpoint(stub, ledger_key(db))
        edit(db, "DELETE FROM audit_events WHERE sequence = 3")
        async with server(db) as stub:
            await register(stub, "fx-late")
            found = await checkpoint(stub, ledger_key(db))
            verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest(), timeout=TIMEOUT)
            request = pb.GetConsistencyProofRequest(first_size=2)
            proof = await stub.GetConsistencyProof(request, timeout=TIMEOUT)
        assert whole.size == 5
        assert found.size == 2
        assert not verdict.ok
        assert proof.hashes == []
        assert proof.second_size == 2


class TestExport:
    async def test_the_manifest_carries_the_checkpoint_of_its_head(
        self, adjudication_db: str
    ) -> None:
        """The export manifest's signed checkpoint covers exactly the head the export read."""
        db = adjudication_db
        async with server(db) as stub:
            await register(stub, "fx-a")
            manifest = None
            async for message in stub.ExportCorpus(pb.ExportCorpusRequest(), timeout=TIMEOUT):
                if message.WhichOneof("item") == "manifest":
                    manifest = message.manifest
            current = await checkpoint(stub, ledger_key(db))
        assert manifest is not None
        public = load_or_create_signing_key(ledger_key(db)).public_key()
        found = parse_signed_checkpoint(manifest.checkpoint, public, origin_for(public))
        assert found.size == manifest.audit_chain_head.sequence
        assert found == current


class TestBadSizes:
    @pytest.mark.parametrize(
        ("rpc", "request_", "field"),
        [
            ("GetInclusionProof", pb.GetInclusionProofRequest(sequence=0), "sequence"),
            ("GetInclusionProof", pb.GetInclusionProofRequest(sequence=99), "sequence"),
            ("GetInclusionProof", pb.GetInclusionProofRequest(sequence=-1), "sequence"),
            (
                "GetInclusionProof",
                pb.GetInclusionProofRequest(sequence=1, tree_size=99),
                "tree_size",
            ),
            (
                "GetInclusionProof",
                pb.GetInclusionProofRequest(sequence=1, tree_size=-1),
                "tree_size",
            ),
            (
                "GetInclusionProof",
                pb.GetInclusionProofRequest(sequence=2, tree_size=1),
                "sequence",
            ),
            ("GetConsistencyProof", pb.GetConsistencyProofRequest(first_size=-1), "first_size"),
            ("GetConsistencyProof", pb.GetConsistencyProofRequest(first_size=99), "first_size"),
            (
                "GetConsistencyProof",
                pb.GetConsistencyProofRequest(first_size=2, second_size=1),
                "first_size",
            ),
            (
                "GetConsistencyProof",
                pb.GetConsistencyProofRequest(first_size=1, second_size=99),
                "second_size",
            ),
        ],
    )
    async def test_refused_with_the_field(
        self, adjudication_db: str, rpc: str, request_: object, field: str
    ) -> None:
        """Sizes outside the log are INVALID_ARGUMENT naming the field."""
        async with server(adjudication_db) as stub:
            await register(stub, "fx-a")
            await register(stub, "fx-b")
            error = await failure(getattr(stub, rpc)(request_, timeout=TIMEOUT))
        assert error.code is grpc.StatusCode.INVALID_ARGUMENT
        assert error.reason == "ERROR_REASON_INVALID_FIELD"
        assert [v.field for v in error.violations] == [field]


class TestClients:
    async def test_sync_and_async_clients_fetch_verifiable_proofs(
        self, adjudication_db: str
    ) -> None:
        """The Python clients' checkpoint and proof methods return what verifies locally."""
        db = adjudication_db
        key = ledger_key(db) if is_postgres(db) else None
        spec = await build_spec(ServeOptions(port=0, db_path=str(db), ledger_signing_key=key))
        async with (
            serving([spec]) as running,
            grpc.aio.insecure_channel(running[0].address) as channel,
        ):
            stub = pb_grpc.AdjudicationServiceStub(channel)
            await register(stub, "fx-first")
            early = await checkpoint(stub, ledger_key(db))
            for n in range(4):
                await register(stub, f"fx-{n}")
            logged = await events(stub)
            target = running[0].address
            async with AsyncAdjudicationClient(target) as client:
                now = await client.get_checkpoint()
                included = await client.get_inclusion_proof(
                    pb.GetInclusionProofRequest(sequence=logged[2].sequence)
                )
            assert verify_inclusion(
                leaf(logged[2]),
                included.leaf_index,
                included.tree_size,
                list(included.hashes),
                now.root_hash,
            )

            def consistency() -> pb.GetConsistencyProofResponse:
                with AdjudicationClient(target) as blocking:  # its own thread: the loop serves
                    return blocking.get_consistency_proof(
                        pb.GetConsistencyProofRequest(first_size=early.size)
                    )

            extended = await asyncio.to_thread(consistency)
        assert now.tree_size == len(logged) > early.size
        assert verify_consistency(
            early.size, now.tree_size, early.root, now.root_hash, list(extended.hashes)
        )

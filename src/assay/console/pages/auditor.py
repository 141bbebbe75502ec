"""The auditor's pages: the chain's verification, the latest signed checkpoint, a saved
checkpoint checked against today's, one event's inclusion proof, and export downloads.

Everything is asked of the services as the signed-in auditor. The proofs are checked
here with the log's own algorithms (``ledger_checks``), against the key the auditor
pins (pasted PEM) or, failing that, the key the server offers — and the page says which,
since the server's own key only shows both notes came from the same signer. An export is
a ZIP of the records and their manifest (``exports``), streamed as the service sends it.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from assay.console import app
from assay.console.pages import exports, ledger_checks
from assay.console.pages.common import bounded, words
from assay.console.sessions import Session
from assay.tlog.checkpoint import Checkpoint
from assay.v1 import adjudication_service_pb2 as adj

EVENTS_PAGE = 1000
MAX_EVENT_PAGES = 100
# A tenant in a download's file name: anything else becomes "_".
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def _chain_view(reply: adj.VerifyAuditChainResponse) -> dict[str, Any]:
    return {
        "ok": reply.ok,
        "checked": reply.events_checked,
        "head": reply.head.sequence,
        "head_hash": reply.head.hash,
        "first_bad": reply.first_bad_sequence,
        "problem": words(adj.AuditProblem.DESCRIPTOR, reply.problem, "AUDIT_PROBLEM_"),
        "detail": reply.detail,
        "record": words(adj.RecordKind.DESCRIPTOR, reply.bad_record_kind, "RECORD_KIND_"),
        "record_id": reply.bad_record_id,
    }


def routes(console: app.Console) -> list[Route]:
    async def today(
        session: Session, pinned: str
    ) -> tuple[str, Ed25519PublicKey | None, Checkpoint | str]:
        """Which key checks (in words), that key, and today's checkpoint checked by it."""
        served = await console.adjudication(session).get_checkpoint(adj.GetCheckpointRequest())
        if pinned.strip():
            key = ledger_checks.public_key(pinned)
            which = "your pinned key"
            if key is None:
                return which, None, "the pinned key is not an Ed25519 public key in PEM"
        else:
            key = ledger_checks.public_key(served.public_key_pem)
            which = "the key the server offers; pin your own to be sure"
            if key is None:
                return which, None, "the server's ledger key is not Ed25519"
        return which, key, ledger_checks.signed(served.signed_note, key)

    async def page(request: Request, session: Session, **extra: Any) -> Response:
        client = console.adjudication(session)
        chain = await client.verify_audit_chain(adj.VerifyAuditChainRequest())
        served = await client.get_checkpoint(adj.GetCheckpointRequest())
        return console.render(
            request,
            "audit.html",
            extra.pop("status", 200),
            session=session,
            chain=_chain_view(chain),
            checkpoint=served,
            root=served.root_hash.hex(),
            **extra,
        )

    async def audit(request: Request, session: Session) -> Response:
        return await page(request, session)

    async def checkpoint_file(request: Request, session: Session) -> Response:
        served = await console.adjudication(session).get_checkpoint(adj.GetCheckpointRequest())
        return Response(
            served.signed_note,
            media_type="text/plain; charset=utf-8",
            headers={"content-disposition": 'attachment; filename="checkpoint.txt"'},
        )

    async def consistency(request: Request, session: Session) -> Response:
        form = await request.form()
        upload = form.get("checkpoint")
        saved = b""
        if isinstance(upload, UploadFile):
            saved = await upload.read(ledger_checks.MAX_NOTE_BYTES + 1)
        if not saved or len(saved) > ledger_checks.MAX_NOTE_BYTES:
            refused = ledger_checks.Verdict(False, "choose a saved checkpoint (at most 16 KiB)")
            return await page(request, session, status=400, consistency=refused)
        which, key, now = await today(session, str(form.get("public_key", "")))
        old: Checkpoint | str = "it is not UTF-8 text"
        with contextlib.suppress(UnicodeDecodeError):
            old = ledger_checks.signed(saved.decode("utf-8"), key) if key else "no key"
        if isinstance(old, str):
            verdict = ledger_checks.Verdict(False, f"the saved checkpoint: {old}")
        elif isinstance(now, str):
            verdict = ledger_checks.Verdict(False, f"today's checkpoint: {now}")
        else:
            proof: list[bytes] = []
            if 0 < old.size <= now.size:
                found = await console.adjudication(session).get_consistency_proof(
                    adj.GetConsistencyProofRequest(first_size=old.size, second_size=now.size)
                )
                proof = list(found.hashes)
            verdict = ledger_checks.consistent(old, now, proof)
        return await page(request, session, consistency=verdict, key_used=which)

    async def inclusion(request: Request, session: Session) -> Response:
        raw = request.query_params.get("sequence", "").strip()
        if not raw.isdigit() or int(raw) < 1:
            verdict = ledger_checks.Verdict(False, "give an event's sequence (1, 2, 3, ...)")
            return await page(request, session, status=400, inclusion=verdict)
        sequence = int(raw)
        which, _, tree = await today(session, request.query_params.get("key", ""))
        if isinstance(tree, str):
            verdict = ledger_checks.Verdict(False, f"today's checkpoint: {tree}")
            return await page(request, session, inclusion=verdict, key_used=which)
        event = await _event(console, session, sequence)
        if event is None or sequence > tree.size:
            verdict = ledger_checks.Verdict(False, f"no event {sequence} in the signed tree")
            return await page(request, session, inclusion=verdict, key_used=which)
        proof = await console.adjudication(session).get_inclusion_proof(
            adj.GetInclusionProofRequest(sequence=sequence, tree_size=tree.size)
        )
        verdict = ledger_checks.included(event.hash, proof.leaf_index, list(proof.hashes), tree)
        shown = {
            "sequence": event.sequence,
            "type": words(adj.AuditEventType.DESCRIPTOR, event.event_type, "AUDIT_EVENT_TYPE_"),
            "actor": event.actor.subject,
            "hash": event.hash,
            "path": [h.hex() for h in proof.hashes],
        }
        return await page(request, session, inclusion=verdict, event=shown, key_used=which)

    async def export(request: Request, session: Session) -> Response:
        fmt = request.query_params.get("format", "jsonl")
        if fmt not in ("jsonl", "csv"):
            fmt = "jsonl"
        tenant = request.query_params.get("tenant", "").strip()
        items = console.adjudication(session).export(tenant, include_reviews=True).__aiter__()
        # The first item is awaited here, so a refusal is a page in plain words, not a
        # broken download.
        first = await anext(items, None)

        async def all_items() -> Any:
            if first is None:
                return
            yield first
            async for item in items:
                yield item

        records, _ = exports.names(fmt, _SAFE_NAME.sub("_", tenant))
        return StreamingResponse(
            exports.zipped(fmt, tenant, all_items()),
            media_type="application/zip",
            headers={"content-disposition": f'attachment; filename="{records}.zip"'},
        )

    return [
        Route("/audit", app.signed_in(console, audit)),
        Route("/audit/checkpoint.txt", app.signed_in(console, checkpoint_file)),
        Route(
            "/audit/consistency",
            bounded(app.signed_in(console, consistency), ledger_checks.MAX_NOTE_BYTES + 8192),
            methods=["POST"],
        ),
        Route("/audit/inclusion", app.signed_in(console, inclusion)),
        Route("/audit/export", app.signed_in(console, export)),
    ]


async def _event(console: app.Console, session: Session, sequence: int) -> adj.AuditEvent | None:
    """Event ``sequence`` of the ledger (ListAuditEvents pages from the start; bounded)."""
    client = console.adjudication(session)
    token = ""
    for _ in range(MAX_EVENT_PAGES):
        reply: adj.ListAuditEventsResponse = await client.list_audit_events(
            adj.ListAuditEventsRequest(page_size=EVENTS_PAGE, page_token=token)
        )
        for event in reply.events:
            if event.sequence == sequence:
                return event
        if not reply.next_page_token or (reply.events and reply.events[-1].sequence > sequence):
            return None
        token = reply.next_page_token
    return None

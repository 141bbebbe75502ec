"""``assay audit public-key``, ``checkpoint``, ``verify --since`` and ``verify-export``: the
transparency log seen from an auditor's side.

An auditor saves a signed checkpoint now (``checkpoint --out``, created owner-only by
``private_files``) and later asks the server to prove that today's ledger extends it
(``verify --since``); both signatures and the RFC 6962 consistency proof are checked here,
locally, against a public key the auditor pinned (``--public-key``; ``public-key --key``
prints it from the key file, offline). ``verify-export`` checks the signature of the
checkpoint an export's manifest carries, then proves every field of every record against it
(``export_proofs``), saying what it cannot prove.

Every file argument takes ``-`` for standard input or output, and a failed check exits 3
(``EXIT_VERIFICATION_FAILED``), never 2 like a command line argparse refused. The checking
uses ``merkle`` and ``checkpoint``, pure modules (no server, storage or grpc code) shared so
the verifier is the algorithm the log uses.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from google.protobuf import json_format

from assay.cli import export_approvals, export_proofs
from assay.cli.common import (
    EXIT_VERIFICATION_FAILED,
    STDIO,
    CliError,
    emit,
    emit_data,
    read_bytes,
    write_text,
)
from assay.cli.private_files import write_private
from assay.safe_text import printable
from assay.tlog.checkpoint import Checkpoint, parse_signed_checkpoint
from assay.tlog.merkle import verify_consistency
from assay.v1 import adjudication_service_pb2 as pb

# A verification that fails: exit 3, like `assay audit verify` on a broken chain.
FAILED = EXIT_VERIFICATION_FAILED


def _read(path: Path, what: str) -> bytes:
    return read_bytes(path, what)


def public_key_pem_of(key_file: Path) -> str:
    """The public half, as PEM, of a ledger key file (PKCS#8 private key, or a public key)."""
    data = _read(key_file, "the ledger key")
    try:
        if b"PRIVATE KEY" in data:
            private = serialization.load_pem_private_key(data, password=None)
            if not isinstance(private, Ed25519PrivateKey):
                raise ValueError("not an Ed25519 key")
            public: Any = private.public_key()
        else:
            public = serialization.load_pem_public_key(data)
    except ValueError as error:
        raise CliError(f"{key_file}: not an Ed25519 PEM key: {error}") from None
    if not isinstance(public, Ed25519PublicKey):
        raise CliError(f"{key_file}: not an Ed25519 key")
    pem = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return pem.decode("ascii")


def load_public_key(path: Path) -> Ed25519PublicKey:
    """The pinned ledger public key (a private key file works too)."""
    pem = public_key_pem_of(path)
    key = serialization.load_pem_public_key(pem.encode("ascii"))
    assert isinstance(key, Ed25519PublicKey)
    return key


def origin_of(note: str) -> str:
    """The note's first line: the log's origin, which is also its signer's key name."""
    return note.split("\n", 1)[0]


def check_note(note: str, key: Ed25519PublicKey, what: str) -> Checkpoint:
    """The checkpoint in ``note`` if ``key`` signed it; ``CliError`` (exit 3) otherwise."""
    try:
        return parse_signed_checkpoint(note, key, origin_of(note))
    except ValueError as error:
        raise CliError(f"{what}: {error}", exit_code=FAILED) from None


def check_consistency(old: Checkpoint, new: Checkpoint, proof: list[bytes]) -> None:
    """``CliError`` (exit 3) unless ``new`` provably extends ``old``."""
    if old.origin != new.origin:
        raise CliError(
            f"the saved checkpoint is of log {old.origin}, the server's of {new.origin}",
            exit_code=FAILED,
        )
    if new.size < old.size:
        raise CliError(
            f"the log shrank: {old.size} event(s) saved, {new.size} now", exit_code=FAILED
        )
    # A malformed proof (wrong hash sizes or count) simply fails: the verifier never raises.
    if not verify_consistency(old.size, new.size, old.root, new.root, proof):
        raise CliError(
            f"the ledger was rewritten: the log at {new.size} event(s) does not extend the "
            f"saved checkpoint of {old.size}",
            exit_code=FAILED,
        )


# --- commands -------------------------------------------------------------------


def public_key(args: argparse.Namespace, rpc: Any) -> int:
    if args.key is not None:
        print(public_key_pem_of(args.key), end="")
        return 0
    reply: pb.GetCheckpointResponse = rpc(args, "GetCheckpoint", pb.GetCheckpointRequest())
    print(reply.public_key_pem, end="")
    return 0


def checkpoint(args: argparse.Namespace, rpc: Any) -> int:
    reply: pb.GetCheckpointResponse = rpc(args, "GetCheckpoint", pb.GetCheckpointRequest())
    if args.out is not None:
        # With ``--out -`` the note is the whole output: nothing else may follow it.
        if str(args.out) == STDIO:
            write_text(args.out, reply.signed_note)
            return 0
        try:
            write_private(args.out, reply.signed_note)  # created 0600, renamed into place
        except OSError as error:
            raise CliError(f"{args.out}: cannot write: {error.strerror or error}") from None
    elif args.output in ("table", "wide"):
        print(reply.signed_note, end="")
        return 0
    return emit(
        args,
        reply,
        lambda: print(
            f"checkpoint of {reply.tree_size} event(s) ({printable(reply.origin)}) "
            f"saved to {printable(args.out)}"
        ),
    )


def verify_since(args: argparse.Namespace, rpc: Any) -> int:
    saved = _read(args.since, "the saved checkpoint").decode("utf-8", "replace")
    reply: pb.GetCheckpointResponse = rpc(args, "GetCheckpoint", pb.GetCheckpointRequest())
    if args.public_key is not None:
        key = load_public_key(args.public_key)
    else:
        # Without a pinned key the signatures only show both notes came from the same key.
        served = serialization.load_pem_public_key(reply.public_key_pem.encode("ascii"))
        if not isinstance(served, Ed25519PublicKey):
            raise CliError("the server's ledger key is not Ed25519", exit_code=FAILED)
        key = served
    old = check_note(saved, key, str(args.since))
    new = check_note(reply.signed_note, key, "the server's checkpoint")
    proof: list[bytes] = []
    if 0 < old.size <= new.size:
        request = pb.GetConsistencyProofRequest(first_size=old.size, second_size=new.size)
        found: pb.GetConsistencyProofResponse = rpc(args, "GetConsistencyProof", request)
        proof = list(found.hashes)
    check_consistency(old, new, proof)
    result = {"ok": True, "origin": new.origin, "from_size": old.size, "to_size": new.size}
    return emit_data(
        args,
        result,
        lambda: print(
            f"audit log consistent: {old.size} -> {new.size} event(s) ({printable(new.origin)})"
        ),
    )


def verify_export(args: argparse.Namespace) -> int:
    corpus: Path = args.corpus
    if str(corpus) == STDIO and args.manifest is None:
        raise CliError("a corpus on standard input needs --manifest", exit_code=2)
    manifest_path: Path = args.manifest or corpus.with_name(corpus.name + ".manifest.json")
    try:
        manifest = json.loads(_read(manifest_path, "the export manifest"))
    except json.JSONDecodeError as error:
        raise CliError(f"{manifest_path}: not JSON: {error}", exit_code=FAILED) from None
    note = manifest.get("checkpoint") if isinstance(manifest, dict) else None
    if not isinstance(note, str) or not note:
        raise CliError(f"{manifest_path}: the manifest carries no checkpoint", exit_code=FAILED)
    found = check_note(note, load_public_key(args.public_key), str(manifest_path))
    head = manifest.get("auditChainHead") or {}
    sequence = int(head.get("sequence", 0))
    if found.size != sequence:
        raise CliError(
            f"{manifest_path}: the checkpoint covers {found.size} event(s) but the manifest's "
            f"audit chain head is #{sequence}",
            exit_code=FAILED,
        )
    records, gaps = check_records(corpus, found, args.allow_unproven)
    declared = int(manifest.get("recordCount", 0))
    if records != declared:
        raise CliError(
            f"{corpus}: {records} record(s), but the manifest declares {declared}",
            exit_code=FAILED,
        )
    approvals = _check_approvals(args, corpus, manifest, found)
    result = {
        "ok": True,
        "origin": found.origin,
        "size": found.size,
        "root": found.root.hex(),
        "records": records,
        "unproven": gaps,
        "approvals": [a.as_dict() for a in approvals],
    }

    def text() -> None:
        print(
            f"export verified: {records} record(s) proven in the signed checkpoint of "
            f"{found.size} event(s) ({printable(found.origin)}), root {found.root.hex()[:16]}…"
        )
        for a in approvals:
            print(printable(export_approvals.summary(a)))
        # One line per reason (the JSON lists every record): an old ledger may have many.
        by_reason: dict[str, list[dict[str, Any]]] = {}
        for gap in gaps:
            by_reason.setdefault(gap["why"], []).append(gap)
        for why, same in by_reason.items():
            fields = sorted({f for gap in same for f in gap["fields"]})
            print(
                f"not proven in {len(same)} place(s), first {same[0]['where']}: "
                f"{', '.join(fields)}: {why}"
            )

    return emit_data(args, result, text)


def _check_approvals(
    args: argparse.Namespace, corpus: Path, manifest: dict[str, Any], signed: Checkpoint
) -> list[export_approvals.Proven]:
    """The approvals file's approvals, each proven (``export_approvals``): the one named, or
    CORPUS.approvals.jsonl when it exists; the manifest's ``approvalCount`` must match."""
    declared = int(manifest.get("approvalCount", 0))
    path: Path | None = args.approvals
    if path is None and str(corpus) != STDIO:
        beside = corpus.with_name(corpus.name + ".approvals.jsonl")
        path = beside if beside.exists() else None
    if path is None:
        if declared:
            raise CliError(
                f"the manifest declares {declared} approval(s), but no approvals file was "
                "given (--approvals)",
                exit_code=FAILED,
            )
        return []
    proven: list[export_approvals.Proven] = []
    seen: dict[str, int] = {}
    text = _read(path, "the exported approvals").decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        message = pb.ExportedApproval()
        try:
            json_format.Parse(line, message)
        except json_format.ParseError as error:
            raise CliError(f"{path}:{number}: not an exported approval: {error}", FAILED) from None
        where = f"{path}:{number}: approval {printable(message.approval_id)}"
        try:
            found = export_approvals.check_approval(message, signed)
        except export_approvals.BadRecord as error:
            raise CliError(f"{where}: {error.field}: {error.why}", exit_code=FAILED) from None
        first = seen.setdefault(found.approval_id, number)
        if first != number:
            raise CliError(f"{where}: approvalId: line {first} is this approval too", FAILED)
        proven.append(found)
    if len(proven) != declared:
        raise CliError(
            f"{path}: {len(proven)} approval(s), but the manifest declares {declared}",
            exit_code=FAILED,
        )
    return proven


def check_records(
    corpus: Path, signed: Checkpoint, allow_unproven: bool = False
) -> tuple[int, list[dict[str, Any]]]:
    """How many records ``corpus`` holds, each proven in ``signed``, and what of them could
    not be proven (``export_proofs.Unproven``); ``CliError`` (exit 3) naming the record and
    field of the first that fails, or the first record lacking bindings unless
    ``allow_unproven``."""
    count = 0
    gaps: list[dict[str, Any]] = []
    lines_of: dict[str, int] = {}  # an export has one record per case
    text = _read(corpus, "the exported corpus").decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record = pb.CorpusRecord()
        try:
            json_format.Parse(line, record)
        except json_format.ParseError as error:
            raise CliError(f"{corpus}:{number}: not a corpus record: {error}", FAILED) from None
        revision = record.revision
        where = f"{corpus}:{number}: case {revision.case_id} revision {revision.revision}"
        try:
            found = export_proofs.check_record(record, signed)
        except export_proofs.BadRecord as error:
            raise CliError(f"{where}: {error.field}: {error.why}", exit_code=FAILED) from None
        first = lines_of.setdefault(revision.case_id, number)
        if first != number:
            raise CliError(
                f"{where}: revision.caseId: line {first} is a record of this case too: an "
                "export holds one per case",
                exit_code=FAILED,
            )
        for gap in found:
            if gap.missing and not allow_unproven:
                raise CliError(
                    f"{where}: {', '.join(gap.fields)}: cannot be proven: {gap.why}; export "
                    "again, or pass --allow-unproven to accept them unproven",
                    exit_code=FAILED,
                )
            gaps.append({"where": where, "fields": list(gap.fields), "why": gap.why})
        count += 1
    return count, gaps

"""Adjudication from the shell: ``assay reviewer``, ``case``, ``queue``, ``review``, ``export``,
``agreement``, ``audit``, ``tenant`` and ``sweep``.

Every mutating command sends a fresh ``request_id`` (or ``--request-id``, to
retry a command safely from a script). Values given on the command line
(``--label``) are JSON when they parse as JSON and strings otherwise, so
``--label key`` and ``--label '"key"'`` mean the same. Tables by default,
``-o json|jsonl`` everywhere; rendering lives in ``adjudication_render``. Calls go
through ``assay.client.AdjudicationClient`` (its timeout, request ids and typed errors).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from assay.cli import adjudication_render as render
from assay.cli import assignment_cmds, audit_log_cmds, case_batches, finding_cmds, signin
from assay.cli.common import (
    EXIT_OK,
    EXIT_VERIFICATION_FAILED,
    CliError,
    Remote,
    add_json_argument,
    add_target_argument,
    emit,
    print_json,
    read_text,
    usage_error,
)
from assay.cli.private_files import private_file, write_private
from assay.cli.progress import progress
from assay.client import AdjudicationClient, export_formats
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2

DEFAULT_TARGET = "127.0.0.1:50053"
SERVICE = "adjudication"

KINDS = {
    "human": gold_pb2.REVIEWER_KIND_HUMAN,
    "fixture": gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE,
}
BASES = {
    "unanimous": gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT,
    "adjudicator": gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION,
    "unresolved": gold_pb2.RESOLUTION_BASIS_UNRESOLVED,
    "not-evaluable": gold_pb2.RESOLUTION_BASIS_NOT_EVALUABLE,
}


def _common(parser: argparse.ArgumentParser, mutating: bool = False) -> None:
    add_target_argument(parser, SERVICE, DEFAULT_TARGET)
    add_json_argument(parser)
    if mutating:
        parser.add_argument(
            "--request-id",
            default="",
            help="retry key: repeating a command with the same id returns the first result",
        )


def _command(
    subparsers: Any,
    name: str,
    help_text: str,
    handler: Callable[[argparse.Namespace], int],
    mutating: bool = False,
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=help_text)
    _common(parser, mutating)
    parser.set_defaults(handler=handler)
    return parser


def register(subparsers: Any) -> None:
    reviewer = subparsers.add_parser("reviewer", help="register and list reviewers")
    sub = reviewer.add_subparsers(dest="reviewer_command", metavar="COMMAND", required=True)
    add = _command(sub, "add", "register a reviewer", _reviewer_add, mutating=True)
    add.add_argument("reviewer_id", help="1-64 lowercase letters, digits, '.', '_' or '-'")
    add.add_argument(
        "--kind",
        choices=sorted(KINDS),
        required=True,
        help="human (needs --attested-by in dev mode; with authentication on, bound to the "
        "token subject equal to REVIEWER_ID) or fixture (tests and demos only)",
    )
    add.add_argument(
        "--attested-by",
        default="",
        help="who vouches that a person is behind it; with authentication on it must equal "
        "your own token subject (left out: filled in with it)",
    )
    _command(sub, "list", "list reviewers", _reviewer_list)

    case = subparsers.add_parser("case", help="enqueue, inspect, resolve and freeze cases")
    sub = case.add_subparsers(dest="case_command", metavar="COMMAND", required=True)
    enqueue = _command(
        sub,
        "enqueue",
        "enqueue the case(s) of a JSON file: all or nothing per 1,000; running it again "
        "stores nothing twice (request ids derive from --request-id, else the content)",
        _case_enqueue,
        True,
    )
    enqueue.add_argument(
        "file", help="a Case as proto JSON, a list of them, or {cases: [...]} ('-': stdin)"
    )
    show = _command(sub, "show", "operator view: verdict, reviews, resolutions", _case_show)
    show.add_argument("case_id")
    state = _command(sub, "state", "the case's derived state", _case_state)
    state.add_argument("case_id")
    resolve = _command(sub, "resolve", "resolve the current round", _case_resolve, True)
    resolve.add_argument("case_id")
    resolve.add_argument("--basis", choices=list(BASES), required=True, help="no majority vote")
    resolve.add_argument("--label", help="the adjudicator's label (JSON, or a bare string)")
    resolve.add_argument(
        "--adjudicator",
        default="",
        help="reviewer id of the adjudicator, not one of the round's reviewers; with "
        "authentication on it must equal your own token subject",
    )
    resolve.add_argument(
        "--rationale", default="", help="why it was decided so (at most 2,000 characters)"
    )
    freeze = _command(sub, "freeze", "freeze the resolved round into a gold label", _freeze, True)
    freeze.add_argument("case_id")
    freeze.add_argument("--expected-revision", type=int, default=0)
    listing = _command(
        sub,
        "list",
        "find cases: by derived state, predicate, assigned reviewer and age, oldest first",
        _case_list,
    )
    finding_cmds.add_case_filters(listing)
    assign = _command(
        sub, "assign", "assign cases to reviewers (each, round-robin, least-loaded)", _assign, True
    )
    assignment_cmds.add_assign_arguments(assign)
    unassign = _command(
        sub, "unassign", "take reviewers off a case, or (--to) replace them", _unassign, True
    )
    assignment_cmds.add_unassign_arguments(unassign)
    revisions = _command(sub, "revisions", "list gold-label revisions", _revisions)
    revisions.add_argument("case_id", nargs="?", default="", help="one case (default: all)")

    queue = _command(
        subparsers,
        "queue",
        "the cases a reviewer still has to review, or (--adjudicator) the disagreements an "
        "adjudicator may decide",
        _queue,
    )
    whose = queue.add_mutually_exclusive_group()
    whose.add_argument(
        "--reviewer",
        help="a reviewer's queue (blinded cases); with authentication on, your own token "
        "subject unless you are an operator (default: the one `assay login` signed in)",
    )
    whose.add_argument(
        "--adjudicator",
        help="an adjudicator's worklist (with the reviews); with authentication on, your own "
        "token subject unless you are an operator",
    )
    queue.add_argument("--tenant", default="", help="one of your tenants (default: all of them)")

    review = _command(subparsers, "review", "submit a review (blinded)", _review, True)
    review.add_argument("case_id")
    review.add_argument(
        "--reviewer",
        help="your reviewer id; with authentication on it must equal your own token subject "
        "(default: the one `assay login` signed in)",
    )
    review.add_argument("--round", type=int, default=0, help="needed to reopen a frozen case")
    _answer_arguments(review)

    amend = _command(
        subparsers,
        "amend",
        "replace your latest review of an undecided round (a new record; the old one stays "
        "on the ledger)",
        _amend,
        True,
    )
    amend.add_argument("review_id", help="your latest review of the case's current round")
    _answer_arguments(amend)
    withdraw = _command(
        subparsers,
        "withdraw",
        "withdraw your latest review of an undecided round (the case returns to your queue)",
        _withdraw,
        True,
    )
    withdraw.add_argument("review_id", help="your latest review of the case's current round")
    withdraw.add_argument("--reason", default="", help="why (at most 1,024 characters)")

    export = _command(
        subparsers, "export", "write the gold corpus as JSON lines, or reviews as CSV", _export
    )
    export.add_argument(
        "--out", required=True, type=Path, help="the file to write ('-': standard output)"
    )
    export.add_argument(
        "--manifest", type=Path, help="default: OUT with .manifest.json (none for '-')"
    )
    export.add_argument("--tenant", default="", help="one of your tenants (default: all of them)")
    export.add_argument(
        "--format",
        choices=export_formats.FORMATS,
        default="jsonl",
        help="jsonl: the records with their proofs; csv: (case_id, reviewer_id, label) rows, "
        "one per review of each label's round, for crowd-kit or krippendorff",
    )
    export.add_argument(
        "--reviews", action="store_true", help="jsonl: add every review of each case"
    )
    export.add_argument(
        "--approvals",
        action="store_true",
        help="jsonl: also write the approvals of the same tenants, with their ledger events, "
        "to OUT.approvals.jsonl",
    )

    agreement = _command(
        subparsers,
        "agreement",
        "Cohen's kappa of double reviews, per reviewer pair and per category; Fleiss' kappa; "
        "Krippendorff's alpha; percent agreement; Gwet's AC1/AC2; each reviewer against gold",
        _agreement,
    )
    agreement.add_argument(
        "--tenant", default="", help="one of your tenants (default: all of them)"
    )
    agreement.add_argument(
        "--bootstrap-resamples",
        type=int,
        default=0,
        metavar="N",
        help="resamples for the bootstrap intervals of Krippendorff's alpha and percent "
        "agreement (default 1,000; at most 10,000)",
    )

    audit = subparsers.add_parser("audit", help="verify and list the audit ledger")
    sub = audit.add_subparsers(dest="audit_command", metavar="COMMAND", required=True)
    verify = _command(
        sub,
        "verify",
        "walk the hash chain and name the first bad event; with --since, prove instead that "
        "the ledger extends a saved checkpoint",
        _audit_verify,
    )
    verify.add_argument(
        "--since", type=Path, metavar="FILE", help="a checkpoint saved by `assay audit checkpoint`"
    )
    verify.add_argument(
        "--public-key",
        type=Path,
        metavar="PEM",
        help="the pinned ledger public key (default: the one the server sends, which only "
        "shows both checkpoints came from the same key)",
    )
    key = _command(sub, "public-key", "print the ledger's Ed25519 public key (PEM)", _public_key)
    key.add_argument(
        "--key", type=Path, metavar="FILE", help="read it offline from the ledger key file"
    )
    checkpoint = _command(sub, "checkpoint", "fetch the signed log checkpoint", _checkpoint)
    checkpoint.add_argument("--out", type=Path, metavar="FILE", help="save the signed note here")
    vexport = sub.add_parser(
        "verify-export", help="prove every field of an export against its signed checkpoint"
    )
    vexport.add_argument("corpus", type=Path, help="the exported corpus.jsonl")
    vexport.add_argument("--public-key", type=Path, metavar="PEM", required=True)
    vexport.add_argument("--manifest", type=Path, help="default: CORPUS.manifest.json")
    vexport.add_argument(
        "--approvals",
        type=Path,
        help="the exported approvals (default: CORPUS.approvals.jsonl, when it exists)",
    )
    vexport.add_argument(
        "--allow-unproven",
        action="store_true",
        help="accept records without the bindings an older export lacks, listing the fields "
        "left unproven (default: refuse them)",
    )
    add_json_argument(vexport)
    vexport.set_defaults(handler=audit_log_cmds.verify_export)
    events = _command(sub, "events", "list audit events", _audit_events)
    events.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")
    finding_cmds.add_event_filters(events)

    tenant = subparsers.add_parser("tenant", help="delete a tenant's records")
    sub = tenant.add_subparsers(dest="tenant_command", metavar="COMMAND", required=True)
    delete = _command(sub, "delete", "delete a tenant's cases and reviews", _tenant_delete, True)
    delete.add_argument("tenant")
    delete.add_argument("--yes", action="store_true", help="confirm the deletion")

    _command(subparsers, "sweep", "delete every expired case", _sweep, mutating=True)


# --- plumbing -------------------------------------------------------------


# RPC name -> AdjudicationClient method, for the commands that name the RPC they make.
_METHODS = {
    method.name: "".join("_" + c.lower() if c.isupper() else c for c in method.name).lstrip("_")
    for method in AdjudicationClient.SERVICE.methods
}


def _rpc(args: argparse.Namespace, name: str, request: Any, context: str = "") -> Any:
    """One call through ``AdjudicationClient``: the library's timeout (``--timeout``),
    request ids and error decoding; a failure is one ``CliError`` line."""
    remote = Remote.of(args, SERVICE)
    with remote.client(AdjudicationClient) as client:
        method = getattr(client, _METHODS[name])
        return remote.call(lambda: method(request), context)


def _request_id(args: argparse.Namespace) -> str:
    return str(args.request_id or uuid.uuid4().hex)


def parse_value(text: str) -> Any:
    """JSON when it parses as JSON, otherwise the text itself as a string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _set_value(target: Any, text: str) -> None:
    json_format.ParseDict(parse_value(text), target)


def _emit(
    args: argparse.Namespace,
    response: Any,
    table: Callable[[Any], None],
    items: Any = None,
) -> int:
    """``-o``: a table, the response as JSON, or JSON Lines (one per item of ``items``)."""
    return emit(args, response, lambda: table(response), items)


# --- reviewers ------------------------------------------------------------


def _reviewer_add(args: argparse.Namespace) -> int:
    request = pb.RegisterReviewerRequest(
        request_id=_request_id(args),
        reviewer=pb.Reviewer(
            reviewer_id=args.reviewer_id, kind=KINDS[args.kind], attested_by=args.attested_by
        ),
    )
    reply = _rpc(args, "RegisterReviewer", request)
    return _emit(args, reply, lambda r: render.reviewers([r.reviewer]))


def _every_page(
    args: argparse.Namespace, name: str, request: Callable[[str], Any], field: str
) -> list[Any]:
    """Every item of a listing: ``name`` called page by page (``request`` builds a page's
    request from its page token) until a page has no next token; ``field`` holds the items."""
    found: list[Any] = []
    token = ""
    while True:
        page = _rpc(args, name, request(token))
        found.extend(getattr(page, field))
        token = page.next_page_token
        if not token:
            return found


def _reviewer_list(args: argparse.Namespace) -> int:
    found = _every_page(
        args,
        "ListReviewers",
        lambda token: pb.ListReviewersRequest(page_size=1000, page_token=token),
        "reviewers",
    )
    reply = pb.ListReviewersResponse(reviewers=found)
    return _emit(args, reply, lambda r: render.reviewers(found), found)


# --- cases ----------------------------------------------------------------


def load_cases(path: str) -> list[pb.Case]:
    """Cases from a JSON file; every error names the file (and the case index)."""
    return read_cases(path)[0]


def read_cases(path: str) -> tuple[list[pb.Case], bool]:
    """``load_cases``, and whether the file held a list of cases (not one case object).
    ``-`` reads standard input."""
    text = read_text(path, "the cases")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise CliError(f"{path}: not JSON: {error}") from None
    if isinstance(data, dict) and "cases" in data:
        data = data["cases"]
    many = isinstance(data, list)
    items = data if many else [data]
    cases = []
    for i, item in enumerate(items):
        where = f"{path}" + (f" case {i}" if len(items) > 1 else "")
        if not isinstance(item, dict):
            raise CliError(f"{where}: a case must be a JSON object")
        item = {k: v for k, v in item.items() if not k.startswith("_")}
        try:
            cases.append(json_format.ParseDict(item, pb.Case()))
        except json_format.ParseError as error:
            raise CliError(f"{where}: {error}") from None
    if not cases:
        raise CliError(f"{path}: no cases")
    return cases, many


def _case_enqueue(args: argparse.Namespace) -> int:
    cases, many = read_cases(args.file)
    case_batches.emit(args, case_batches.enqueue(args, cases, many), many)
    return 0


def _case_list(args: argparse.Namespace) -> int:
    request = finding_cmds.cases_request(args)
    found = finding_cmds.collect(args, _rpc, "ListCases", request, "cases")
    reply = pb.ListCasesResponse(cases=found)
    return _emit(args, reply, lambda r: finding_cmds.case_table(found), found)


def _case_show(args: argparse.Namespace) -> int:
    reply = _rpc(args, "GetCase", pb.GetCaseRequest(case_id=args.case_id))
    return _emit(args, reply, render.case_detail)


def _case_state(args: argparse.Namespace) -> int:
    reply = _rpc(args, "GetCaseState", pb.GetCaseStateRequest(case_id=args.case_id))
    return _emit(args, reply, render.case_state)


def _case_resolve(args: argparse.Namespace) -> int:
    request = pb.ResolveCaseRequest(
        request_id=_request_id(args),
        case_id=args.case_id,
        basis=BASES[args.basis],
        adjudicator_reviewer_id=args.adjudicator,
        rationale=args.rationale,
    )
    if args.label is not None:
        _set_value(request.label, args.label)
    reply = _rpc(args, "ResolveCase", request)
    return _emit(args, reply, render.resolution)


def _assign(args: argparse.Namespace) -> int:
    reply = _rpc(args, "AssignCases", assignment_cmds.assign_request(args, _request_id(args)))
    found = list(reply.assignments)
    return _emit(args, reply, lambda r: assignment_cmds.table(found), found)


def _unassign(args: argparse.Namespace) -> int:
    reply = _rpc(args, "UnassignCase", assignment_cmds.unassign_request(args, _request_id(args)))
    return _emit(args, reply, lambda r: assignment_cmds.table([r.assignment]))


def _freeze(args: argparse.Namespace) -> int:
    request = pb.FreezeGoldLabelRequest(
        request_id=_request_id(args),
        case_id=args.case_id,
        expected_revision=args.expected_revision,
    )
    reply = _rpc(args, "FreezeGoldLabel", request)
    return _emit(args, reply, lambda r: render.revisions([r.revision]))


def _revisions(args: argparse.Namespace) -> int:
    found = _every_page(
        args,
        "ListGoldLabelRevisions",
        lambda token: pb.ListGoldLabelRevisionsRequest(
            case_id=args.case_id, page_size=1000, page_token=token
        ),
        "revisions",
    )
    reply = pb.ListGoldLabelRevisionsResponse(revisions=found)
    return _emit(args, reply, lambda r: render.revisions(found), found)


# --- reviewing --------------------------------------------------------------


def _signed_in_reviewer(args: argparse.Namespace) -> None:
    """``--reviewer``, else the reviewer id of the current context's sign-in."""
    if not args.reviewer:
        try:
            args.reviewer = signin.signed_in_reviewer()
        except signin.SignInError as error:
            raise CliError(str(error)) from None
    if not args.reviewer:
        raise usage_error("give --reviewer (or sign in: assay login, assay context)")


def _queue(args: argparse.Namespace) -> int:
    if args.adjudicator:
        return _worklist(args)
    _signed_in_reviewer(args)
    found = _every_page(
        args,
        "ListQueue",
        lambda token: pb.ListQueueRequest(
            reviewer_id=args.reviewer, tenant=args.tenant, page_size=1000, page_token=token
        ),
        "cases",
    )
    reply = pb.ListQueueResponse(cases=found)
    return _emit(args, reply, lambda r: render.queue(args.reviewer, found), found)


def _worklist(args: argparse.Namespace) -> int:
    items = _every_page(
        args,
        "ListAdjudicationQueue",
        lambda token: pb.ListAdjudicationQueueRequest(
            adjudicator_id=args.adjudicator, tenant=args.tenant, page_size=1000, page_token=token
        ),
        "items",
    )
    reply = pb.ListAdjudicationQueueResponse(items=items)
    return _emit(args, reply, lambda r: render.worklist(args.adjudicator, items), items)


def _answer_arguments(parser: argparse.ArgumentParser) -> None:
    """A review's answer (one of --label, --unresolved, --not-evaluable) and its rationale."""
    outcome = parser.add_mutually_exclusive_group(required=True)
    outcome.add_argument("--label", help="the label (JSON, or a bare string)")
    outcome.add_argument("--unresolved", metavar="REASON", help="cannot decide, and why")
    outcome.add_argument("--not-evaluable", metavar="REASON", help="cannot be judged as posed")
    parser.add_argument(
        "--rationale",
        default="",
        help="a note for the adjudicator (at most 2,000 characters; never shown to other "
        "reviewers)",
    )


def _answer(
    args: argparse.Namespace, request: pb.SubmitReviewRequest | pb.AmendReviewRequest
) -> None:
    if args.label is not None:
        request.outcome = pb.REVIEW_OUTCOME_LABEL
        _set_value(request.label, args.label)
    elif args.unresolved is not None:
        request.outcome = pb.REVIEW_OUTCOME_UNRESOLVED
        request.reason = args.unresolved
    else:
        request.outcome = pb.REVIEW_OUTCOME_NOT_EVALUABLE
        request.reason = args.not_evaluable
    request.rationale = args.rationale


def _review(args: argparse.Namespace) -> int:
    _signed_in_reviewer(args)
    request = pb.SubmitReviewRequest(
        request_id=_request_id(args),
        case_id=args.case_id,
        reviewer_id=args.reviewer,
        round=args.round,
    )
    _answer(args, request)
    reply = _rpc(args, "SubmitReview", request)
    return _emit(args, reply, render.submitted)


def _amend(args: argparse.Namespace) -> int:
    request = pb.AmendReviewRequest(request_id=_request_id(args), review_id=args.review_id)
    _answer(args, request)
    reply = _rpc(args, "AmendReview", request)
    return _emit(args, reply, render.submitted)


def _withdraw(args: argparse.Namespace) -> int:
    request = pb.WithdrawReviewRequest(
        request_id=_request_id(args), review_id=args.review_id, reason=args.reason
    )
    reply = _rpc(args, "WithdrawReview", request)
    return _emit(args, reply, render.submitted)


# --- the corpus and the ledger ------------------------------------------------


def _export(args: argparse.Namespace) -> int:
    out: Path = args.out
    to_stdout = str(out) == "-"
    # On standard output only the records go out; a manifest only where --manifest says.
    default_manifest = None if to_stdout else out.with_name(out.name + ".manifest.json")
    manifest_path: Path | None = args.manifest or default_manifest
    reviews = args.reviews or args.format == "csv"
    approvals_path = out.with_name(out.name + ".approvals.jsonl") if args.approvals else None
    if approvals_path is not None and (to_stdout or args.format != "jsonl"):
        raise CliError("--approvals needs --format jsonl and an --out file", exit_code=2)
    remote = Remote.of(args, SERVICE)
    try:
        with (
            remote.client(AdjudicationClient) as client,
            # A file is created 0600 and renamed into place whole (``private_files``).
            contextlib.nullcontext(sys.stdout) if to_stdout else private_file(out) as sink,
            contextlib.nullcontext(None)
            if approvals_path is None
            else private_file(approvals_path) as approval_sink,
        ):
            write = export_formats.record_writer(args.format, sink)
            enabled = sys.stderr.isatty() and not args.json
            with progress("exporting gold labels", enabled=enabled, unit="records") as advance:

                def run() -> pb.ExportManifest:
                    # The library's stream checks the export is whole: records, approvals,
                    # then one manifest counting them (else DataLossError, exit 3).
                    for item in client.export(
                        args.tenant,
                        include_reviews=reviews,
                        include_approvals=approval_sink is not None,
                    ):
                        if isinstance(item, pb.ExportManifest):
                            return item
                        if isinstance(item, pb.ExportedApproval):
                            assert approval_sink is not None
                            export_formats.write_line(approval_sink, item)
                            continue
                        advance(write((item,)))
                    raise CliError("the export stream ended without a manifest")

                manifest = remote.call(run, "export")
    except OSError as error:
        raise CliError(f"{out}: cannot write: {error.strerror}") from None
    data = json_format.MessageToDict(manifest)
    if manifest_path is not None:
        text = json.dumps(data, indent=2, sort_keys=True) + "\n"
        try:
            write_private(manifest_path, text)
        except OSError as error:
            raise CliError(f"{manifest_path}: cannot write: {error.strerror}") from None
    if to_stdout or manifest_path is None:
        return 0
    if args.json:
        print_json(manifest)
        return 0
    render.manifest(manifest, out, manifest_path)
    if approvals_path is not None:
        print(f"{manifest.approval_count} approval(s) -> {approvals_path}")
    return 0


def _agreement(args: argparse.Namespace) -> int:
    request = pb.ComputeAgreementRequest(
        tenant=args.tenant, bootstrap_resamples=args.bootstrap_resamples
    )
    reply = _rpc(args, "ComputeAgreement", request)
    return _emit(args, reply, render.agreement)


def _public_key(args: argparse.Namespace) -> int:
    return audit_log_cmds.public_key(args, _rpc)


def _checkpoint(args: argparse.Namespace) -> int:
    return audit_log_cmds.checkpoint(args, _rpc)


def _audit_verify(args: argparse.Namespace) -> int:
    if args.since is not None:
        return audit_log_cmds.verify_since(args, _rpc)
    reply = _rpc(args, "VerifyAuditChain", pb.VerifyAuditChainRequest())
    _emit(args, reply, render.verdict)
    return EXIT_OK if reply.ok else EXIT_VERIFICATION_FAILED


def _audit_events(args: argparse.Namespace) -> int:
    request = finding_cmds.events_request(args)
    found = finding_cmds.collect(args, _rpc, "ListAuditEvents", request, "events")
    reply = pb.ListAuditEventsResponse(events=found)
    return _emit(args, reply, lambda r: render.audit_events(found), found)


def _tenant_delete(args: argparse.Namespace) -> int:
    if not args.yes:
        raise CliError(
            f"deleting tenant {args.tenant!r} removes its cases and reviews for good; "
            "repeat with --yes to confirm"
        )
    request = pb.DeleteTenantRecordsRequest(request_id=_request_id(args), tenant=args.tenant)
    reply = _rpc(args, "DeleteTenantRecords", request)
    return _emit(args, reply, lambda r: render.deleted(f"tenant {args.tenant}", r))


def _sweep(args: argparse.Namespace) -> int:
    request = pb.SweepExpiredRecordsRequest(request_id=_request_id(args))
    with progress("sweeping expired cases", enabled=sys.stderr.isatty() and not args.json):
        reply = _rpc(args, "SweepExpiredRecords", request)
    return _emit(args, reply, lambda r: render.deleted("expired cases", r))

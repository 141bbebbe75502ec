"""``assay resolve`` and ``assay policy``: call the Resolver from the shell.

``resolve`` reads an evidence file (any shape ``assay.client.evidence``
accepts, legacy bundles included), resolves one semantic (``--subject`` and
``--predicate``) or every semantic in the file, and prints a table per
semantic or, with ``-o json``, the response as proto JSON (``-o jsonl``: one
resolution per line). ``--detail summary`` asks for each resolution without its
per-claim part (claim weights, groups, excluded claims' bodies, warnings): what a
large evidence file needs to be judged. Calls go through ``assay.client.ResolverClient``.

A CI job can gate on ``resolve``'s exit code, whatever ``-o`` prints: 0 when every
resolution is RESOLVED and none requires review, ``EXIT_REQUIRES_REVIEW`` (4) when one
requires human review, ``EXIT_UNSETTLED`` (5) when none does but one is CONFLICTED or
INSUFFICIENT (``settled_exit_code``). Claims' refs, values and warnings are shown through
``assay.safe_text``.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from google.protobuf import json_format
from rich.table import Table

from assay.cli.common import (
    EXIT_OK,
    EXIT_REQUIRES_REVIEW,
    EXIT_UNSETTLED,
    CliError,
    Remote,
    add_json_argument,
    add_target_argument,
    console,
    emit,
    fmt_value,
    print_table,
    read_evidence,
    stamp_time,
    usage_error,
)
from assay.client import ResolverClient
from assay.safe_text import markup as _m
from assay.v1 import resolution_pb2, resolver_service_pb2

DEFAULT_TARGET = "127.0.0.1:50051"
_DETAIL = {
    "full": resolver_service_pb2.RESOLUTION_DETAIL_FULL,
    "summary": resolver_service_pb2.RESOLUTION_DETAIL_SUMMARY,
}


def register(subparsers: Any) -> None:
    resolve = subparsers.add_parser(
        "resolve", help="resolve the claims of an evidence file (one semantic or all)"
    )
    resolve.add_argument(
        "file", help="evidence JSON: {claims: [...]}, a list, or a legacy bundle ('-': stdin)"
    )
    resolve.add_argument("--subject", help="resolve only this subject (with --predicate)")
    resolve.add_argument("--predicate", help="resolve only this predicate (with --subject)")
    resolve.add_argument(
        "--as-of", help="judge staleness at this RFC 3339 time (with --stale-after)"
    )
    resolve.add_argument(
        "--stale-after", type=float, help="seconds after which a claim is stale (with --as-of)"
    )
    resolve.add_argument(
        "--detail",
        choices=sorted(_DETAIL),
        default="full",
        help="full: every claim's weight and group (default); summary: per value only",
    )
    add_target_argument(resolve, "resolver", DEFAULT_TARGET)
    add_json_argument(resolve)
    resolve.set_defaults(handler=_resolve)

    policy = subparsers.add_parser(
        "policy",
        help="show the reliability table, its digest, the conflict margin and safety predicates",
    )
    add_target_argument(policy, "resolver", DEFAULT_TARGET)
    add_json_argument(policy)
    policy.set_defaults(handler=_policy)


def _staleness(args: argparse.Namespace, request: Any) -> None:
    if (args.as_of is None) != (args.stale_after is None):
        raise usage_error("--as-of and --stale-after go together")
    if args.as_of is None:
        return
    try:
        as_of = datetime.fromisoformat(args.as_of.replace("Z", "+00:00"))
    except ValueError:
        raise CliError(f"--as-of {args.as_of!r} is not an RFC 3339 time") from None
    if as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=UTC)
    request.as_of.FromDatetime(as_of)
    request.stale_after.FromMilliseconds(round(args.stale_after * 1000))


def _resolve(args: argparse.Namespace) -> int:
    if (args.subject is None) != (args.predicate is None):
        raise usage_error("--subject and --predicate go together (or give neither to resolve all)")
    evidence = read_evidence(args.file)
    remote = Remote.of(args, "resolver")
    with remote.client(ResolverClient) as client:
        if args.subject is not None:
            single = resolver_service_pb2.ResolveSemanticRequest(
                evidence=evidence,
                subject=args.subject,
                predicate=args.predicate,
                detail=_DETAIL[args.detail],
            )
            _staleness(args, single)
            response: Any = remote.call(lambda: client.resolve_semantic(single), context=args.file)
            resolutions = [response.resolution]
        else:
            every = resolver_service_pb2.ResolveEvidenceRequest(
                evidence=evidence, detail=_DETAIL[args.detail]
            )
            _staleness(args, every)
            response = remote.call(lambda: client.resolve_evidence(every), context=args.file)
            resolutions = list(response.resolutions)
    emit(args, response, lambda: _print_resolutions(args, response, resolutions), resolutions)
    return settled_exit_code(resolutions)


def settled_exit_code(resolutions: list[resolution_pb2.SemanticResolution]) -> int:
    """What the resolutions mean to a script: 4 when any requires human review (it wins),
    5 when none does but any is not RESOLVED, else 0 (no resolution at all is 0 too)."""
    if any(r.requires_review for r in resolutions):
        return EXIT_REQUIRES_REVIEW
    if any(r.status != resolution_pb2.RESOLUTION_STATUS_RESOLVED for r in resolutions):
        return EXIT_UNSETTLED
    return EXIT_OK


def _print_resolutions(
    args: argparse.Namespace, response: Any, resolutions: list[resolution_pb2.SemanticResolution]
) -> None:
    out = console()
    if not resolutions:
        out.print("no claims: nothing to resolve")
    for resolution in resolutions:
        _print_resolution(out, resolution)
    if args.subject is None:
        out.print(
            f"coverage (display only, never a safety signal): {response.coverage_confidence:.3f}"
        )


_STATUS_STYLE = {
    resolution_pb2.RESOLUTION_STATUS_RESOLVED: "green",
    resolution_pb2.RESOLUTION_STATUS_CONFLICTED: "bold red",
    resolution_pb2.RESOLUTION_STATUS_INSUFFICIENT: "yellow",
}


def _enum_name(enum: Any, number: int, prefix: str) -> str:
    return str(enum.Name(number)).removeprefix(prefix)


def _print_resolution(out: Any, r: resolution_pb2.SemanticResolution) -> None:
    status = _enum_name(resolution_pb2.ResolutionStatus, r.status, "RESOLUTION_STATUS_")
    title = f"{_m(r.subject)} · {_m(r.predicate)}  [{_STATUS_STYLE.get(r.status, '')}]{status}[/]"
    if r.HasField("leader"):
        title += f"  leader {_m(r.leader.value_key)} ({r.leader.support:.3f})"
    if r.safety_sensitive:
        title += "  [magenta]safety-sensitive[/]"
    if r.requires_review:
        title += "  [bold red]REQUIRES REVIEW[/]"
    out.print(title)
    if r.values:
        print_table(_values_table(r), out)
    if r.rationale:
        flags = ", ".join(
            _enum_name(resolution_pb2.RationaleFlag, f, "RATIONALE_FLAG_") for f in r.rationale
        )
        out.print(f"  rationale: {flags}")
    for e in r.excluded:
        reason = _enum_name(resolution_pb2.ExclusionReason, e.reason, "EXCLUSION_REASON_")
        by = f" by {_m(', '.join(e.superseded_by))}" if e.superseded_by else ""
        out.print(f"  excluded {_m(e.claim_ref)}: {reason}{by}")
    for w in r.warnings:
        code = _enum_name(resolution_pb2.WarningCode, w.code, "WARNING_CODE_")
        out.print(f"  [yellow]warning[/] {code} {_m(w.claim_ref)}: {_m(w.message)}")
    out.print()


def _values_table(r: resolution_pb2.SemanticResolution) -> Table:
    """Each value's support, and with FULL detail its groups and claims (a summary has none)."""
    explained = any(v.claims for v in r.values)
    table = Table(show_edge=False, pad_edge=False)
    columns = ["value", "support"]
    if explained:
        columns += ["groups", "claims (effective weight, * = counted)"]
    for column in columns:
        table.add_column(column)
    for v in r.values:
        row = [fmt_value(json_format.MessageToDict(v.value)), f"{v.support:.3f}"]
        if explained:
            row.append(
                ", ".join(
                    f"{g.correlation_group}{'' if g.declared else ' (defaulted)'}" for g in v.groups
                )
            )
            row.append(
                ", ".join(
                    f"{c.claim_ref} {c.effective_weight:.3f}{'*' if c.counted else ''}"
                    for c in v.claims
                )
            )
        table.add_row(*row)
    return table


def _policy(args: argparse.Namespace) -> int:
    remote = Remote.of(args, "resolver")
    with remote.client(ResolverClient) as client:
        response = remote.call(lambda: client.get_resolver_policy())
    return emit(args, response, lambda: _print_policy(response))


def _print_policy(response: resolver_service_pb2.GetResolverPolicyResponse) -> None:
    out = console()
    table = Table(title=f"reliability table ({_m(response.reliability_table_origin)})")
    table.add_column("source kind")
    table.add_column("reliability", justify="right")
    for row in response.reliability_table:
        table.add_row(row.source, _reliability(row.reliability))
    print_table(table, out)
    # A server older than the digest sends none: then nothing is claimed about the table.
    # Whole and on one line, unlike a table's digests: it is compared and copied.
    if response.reliability_table_digest:
        out.print("table digest: " + _m(response.reliability_table_digest), soft_wrap=True)
        loaded = stamp_time(response.reliability_table_load_time)
        if loaded:
            out.print(f"loaded: {loaded}")
    out.print(
        f"conflict margin: {response.conflict_margin:g} "
        f"(inclusive, tolerance {response.margin_tolerance:g})"
    )
    out.print("safety-sensitive predicates: " + _m(", ".join(response.safety_sensitive_predicates)))


def _reliability(value: float) -> str:
    """Two decimals, or every digit a table file gave (a calibrated ``0.8123`` is not 0.81)."""
    text = f"{value:.2f}"
    return text if float(text) == value else repr(value)

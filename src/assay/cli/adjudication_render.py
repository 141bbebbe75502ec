"""Tables for the adjudication commands (``adjudication_cmds``): one function per response kind.

Every table names what the operator needs to act on; enum values are shown by
name without their prefixes; ids are never wrapped or cut (``print_table``),
digests are shortened unless ``-o wide``; fixture provenance is always spelled
out, so a synthetic label is never mistaken for human ground truth on screen.
Stored text (subjects, reasons, payloads, server details) is shown through
``assay.safe_text``: table cells by ``print_table``, lines written as markup by ``_m``.
Times are RFC 3339 in UTC, payload times (stored as microseconds) included.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from rich.table import Table
from rich.text import Text

from assay.cli.common import (
    console,
    fmt_value,
    id_columns,
    is_wide,
    micros_time,
    print_table,
    short,
    stamp_time,
)
from assay.safe_text import markup as _m
from assay.safe_text import text
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2


def _name(enum: Any, number: int, prefix: str) -> str:
    return str(enum.Name(number)).removeprefix(prefix)


def _value(message: Any) -> str:
    return fmt_value(json_format.MessageToDict(message))


_time = stamp_time


_PROVENANCE = {
    gold_pb2.LABELING_PROVENANCE_HUMAN_ADJUDICATED: "human",
    gold_pb2.LABELING_PROVENANCE_SYNTHETIC_MECHANISM_TEST: "synthetic",
}


def _identity(subject: str) -> str:
    """Who a record names as its authenticated principal ("-": none, as in dev mode). The
    issuer is left to ``--json``: one issuer is the common case, and tables stay narrow."""
    return subject or "-"


def reviewers(found: Sequence[pb.Reviewer]) -> None:
    table = Table("reviewer", "kind", "attested by", "bound to", "registered")
    for r in found:
        table.add_row(
            r.reviewer_id,
            _name(gold_pb2.ReviewerKind, r.kind, "REVIEWER_KIND_"),
            r.attested_by,
            _identity(r.identity_subject),
            _time(r.register_time),
        )
    print_table(id_columns(table, "reviewer", "bound to"))


def cases(found: Sequence[pb.Case]) -> None:
    table = Table("case", "tenant", "subject", "predicate", "candidates", "expires")
    for c in found:
        candidates = ", ".join(_value(v) for v in c.candidate_values)
        table.add_row(c.case_id, c.tenant, c.subject, c.predicate, candidates, _time(c.expire_time))
    print_table(id_columns(table, "case"))


def case_state(reply: pb.GetCaseStateResponse) -> None:
    state = _name(pb.CaseState, reply.state, "CASE_STATE_")
    expired = "  (expired)" if reply.expired else ""
    console().print(
        f"{_m(reply.case_id)}: [bold]{state}[/]{expired}  round {reply.round}, "
        f"{reply.review_count} review(s) this round, {reply.revision_count} revision(s)"
    )


def case_detail(reply: pb.GetCaseResponse) -> None:
    out = console()
    c = reply.case
    state = _name(pb.CaseState, reply.state, "CASE_STATE_")
    out.print(
        f"[bold]{_m(c.case_id)}[/]  {_m(c.subject)} · {_m(c.predicate)}  tenant {_m(c.tenant)}"
    )
    out.print(
        f"state {state}, round {reply.round}; system verdict (hidden from reviewers): "
        f"{_m(_value(c.local_verdict))}"
    )
    table = Table("round", "review", "reviewer", "outcome", "label / reason")
    for r in reply.reviews:
        outcome = _name(pb.ReviewOutcome, r.outcome, "REVIEW_OUTCOME_")
        table.add_row(str(r.round), r.review_id, r.reviewer_id, outcome, r.label_key or r.reason)
    print_table(id_columns(table, "review", "reviewer"), out)
    for res in reply.resolutions:
        _print_resolution(res)


def _print_resolution(res: pb.Resolution) -> None:
    basis = _name(gold_pb2.ResolutionBasis, res.basis, "RESOLUTION_BASIS_")
    by = f" by {_m(res.adjudicator_reviewer_id)}" if res.adjudicator_reviewer_id else ""
    label = f" → {_m(res.label_key)}" if res.label_key else " (no label)"
    console().print(f"round {res.round} resolved: {basis}{by}{label}")


def resolution(reply: pb.ResolveCaseResponse) -> None:
    _print_resolution(reply.resolution)


def submitted(
    reply: pb.SubmitReviewResponse | pb.AmendReviewResponse | pb.WithdrawReviewResponse,
) -> None:
    """A review record written by SubmitReview, AmendReview or WithdrawReview."""
    r = reply.review
    outcome = _name(pb.ReviewOutcome, r.outcome, "REVIEW_OUTCOME_")
    state = _name(pb.CaseState, reply.state, "CASE_STATE_")
    replaces = f", replacing {_m(r.supersedes_review_id)}" if r.supersedes_review_id else ""
    console().print(
        f"review {_m(r.review_id)} recorded: {_m(r.reviewer_id)} → {outcome} "
        f"{_m(r.label_key or r.reason)} "
        f"(round {r.round}{replaces}); case now {state}"
    )


def revisions(found: Sequence[gold_pb2.GoldLabelRevision]) -> None:
    table = Table("case", "rev", "basis", "label", "provenance", "reviewers", "digest")
    table.columns[4].no_wrap = True
    for g in found:
        table.add_row(
            g.case_id,
            str(g.revision),
            _name(gold_pb2.ResolutionBasis, g.basis, "RESOLUTION_BASIS_"),
            g.label_key or "—",
            _PROVENANCE.get(g.provenance, "?"),
            ", ".join(g.contributing_reviewer_ids)
            + (f" (adj. {g.adjudicator_reviewer_id})" if g.adjudicator_reviewer_id else ""),
            short(g.digest),
        )
    print_table(id_columns(table, "case"))


def queue(reviewer: str, found: Sequence[pb.BlindedCase]) -> None:
    if not found:
        console().print(f"nothing to review for {_m(reviewer)}")
        return
    table = Table("case", "round", "subject", "predicate", "candidates", "evidence", "context")
    for c in found:
        table.add_row(
            c.case_id,
            str(c.round),
            c.subject,
            c.predicate,
            ", ".join(_value(v) for v in c.candidate_values),
            ", ".join(c.evidence_refs),
            c.context,
        )
    print_table(id_columns(table, "case"))


def worklist(adjudicator: str, found: Sequence[pb.AdjudicationItem]) -> None:
    if not found:
        console().print(f"nothing to adjudicate for {_m(adjudicator)}")
        return
    table = Table("case", "round", "subject", "predicate", "candidates", "reviews")
    for item in found:
        c = item.case
        reviews = "; ".join(
            f"{r.reviewer_id}: "
            + (r.label_key or _name(pb.ReviewOutcome, r.outcome, "REVIEW_OUTCOME_").lower())
            for r in item.reviews
        )
        table.add_row(
            c.case_id,
            str(item.round),
            c.subject,
            c.predicate,
            ", ".join(_value(v) for v in c.candidate_values),
            reviews,
        )
    print_table(id_columns(table, "case"))


def manifest(m: pb.ExportManifest, out: Path, manifest_path: Path) -> None:
    console().print(
        f"wrote {m.record_count:,} record(s) to {_m(out)} "
        f"({m.human_adjudicated_count:,} human-adjudicated, {m.synthetic_count:,} synthetic)"
    )
    if m.contains_synthetic_labels:
        console().print(
            "[yellow]contains synthetic labels[/]: fixture reviewers contributed; "
            "do not treat them as human ground truth"
        )
    for e in m.exclusions:
        reason = _name(pb.ExportExclusionReason, e.reason, "EXPORT_EXCLUSION_REASON_")
        console().print(f"excluded {_m(e.case_id)} revision {e.revision}: {reason}")
    console().print(
        f"manifest {_m(manifest_path)}; audit chain head #{m.audit_chain_head.sequence} "
        f"{_m(short(m.audit_chain_head.hash))}"
    )


def agreement(a: pb.ComputeAgreementResponse) -> None:
    out = console()
    status = _name(pb.AgreementStatus, a.status, "AGREEMENT_STATUS_")
    if a.status == pb.AGREEMENT_STATUS_COMPUTED:
        out.print(
            f"Cohen's kappa {a.kappa:.3f} (SE {a.standard_error:.3f}, 95% CI "
            f"{a.ci_lower:.3f} to {a.ci_upper:.3f}) over {a.case_count} double-reviewed rounds"
        )
    elif a.status == pb.AGREEMENT_STATUS_INSUFFICIENT:
        out.print(f"{status}: {a.case_count} double-reviewed round(s); {a.min_cases} needed")
    else:
        why = _name(pb.AgreementUndefinedReason, a.undefined_reason, "AGREEMENT_UNDEFINED_REASON_")
        out.print(f"{status} ({why}) over {a.case_count} rounds: kappa has no value here")
    if a.fixture_reviewers_contributed:
        out.print(
            "[yellow]fixture reviewers contributed[/]: a mechanism demonstration, "
            "not a real inter-rater agreement"
        )
    out.print(f"Fleiss' kappa: {figure_text(a.fleiss_kappa)}")
    out.print(f"Krippendorff's alpha (nominal): {figure_text(a.krippendorff_alpha)}")
    out.print(f"Percent agreement (no chance correction): {figure_text(a.percent_agreement)}")
    out.print(f"Gwet's AC1 (nominal): {figure_text(a.gwet_ac1)}")
    out.print(f"Gwet's AC2 (quadratic weights): {figure_text(a.gwet_ac2)}")
    if a.pairs:
        pairs = Table("reviewer a", "reviewer b", "Cohen's kappa")
        for p in a.pairs:
            pairs.add_row(p.reviewer_a, p.reviewer_b, Text.from_markup(figure_text(p.kappa)))
        print_table(id_columns(pairs, "reviewer a", "reviewer b"), out)
    if a.categories:
        categories = Table("category", "kappa, one against the rest")
        for c in a.categories:
            categories.add_row(c.category, Text.from_markup(figure_text(c.kappa)))
        print_table(categories, out)
    if a.reviewers:
        reviewers = Table("reviewer", "agreement with the gold labels")
        for r in a.reviewers:
            reviewers.add_row(r.reviewer_id, Text.from_markup(figure_text(r.gold_agreement)))
        print_table(id_columns(reviewers, "reviewer"), out)


def figure_text(f: pb.AgreementFigure) -> str:
    """One figure in a line, as markup: the value and interval, or why there is none
    (numbers and enum names only, no stored text)."""
    fixture = " [yellow](fixture reviewers)[/]" if f.fixture_reviewers_contributed else ""
    rounds = f"{f.case_count} round(s)"
    if f.status == pb.AGREEMENT_STATUS_COMPUTED:
        interval = (
            f", 95% CI {f.ci_lower:.3f} to {f.ci_upper:.3f}" if f.HasField("ci_lower") else ""
        )
        return f"{f.value:.3f}{interval} over {rounds}{fixture}"
    if f.status == pb.AGREEMENT_STATUS_INSUFFICIENT:
        return f"INSUFFICIENT: {rounds}; {f.min_cases} needed{fixture}"
    why = _name(pb.AgreementUndefinedReason, f.undefined_reason, "AGREEMENT_UNDEFINED_REASON_")
    return f"UNDEFINED ({why}) over {rounds}{fixture}"


def verdict(v: pb.VerifyAuditChainResponse) -> None:
    out = console()
    if v.ok:
        out.print(
            f"[green]audit chain verified[/]: {v.events_checked} event(s), head "
            f"#{v.head.sequence} {_m(short(v.head.hash))}"
        )
        return
    problem = _name(pb.AuditProblem, v.problem, "AUDIT_PROBLEM_")
    at = f" at event #{v.first_bad_sequence}" if v.first_bad_sequence else ""
    out.print(f"[bold red]audit chain broken[/]{at}: {problem} — {_m(v.detail)}")


def audit_events(found: Sequence[pb.AuditEvent]) -> None:
    """The ledger's events. ``-o wide``: one line each, digests whole. The default fits 80
    columns: the time under the event, one payload entry per line, digests shortened and
    the event's own hash left to ``-o wide``."""
    wide = is_wide()
    table = (
        Table("#", "event", "actor", "time", "payload", "hash")
        if wide
        else Table("#", "event, time", "actor", "payload")
    )
    for e in found:
        entries = [text(f"{k}={_payload_value(k, v)}") for k, v in sorted(e.payload.items())]
        event = _name(pb.AuditEventType, e.event_type, "AUDIT_EVENT_TYPE_")
        actor = _identity(e.actor.subject)
        if wide:
            payload = Text(" ").join(entries)
            table.add_row(str(e.sequence), event, actor, _time(e.occur_time), payload, e.hash)
        else:
            when = Text("\n").join([text(event), text(_time(e.occur_time))])
            table.add_row(str(e.sequence), when, actor, Text("\n").join(entries))
    print_table(table)


def _payload_value(key: str, value: str) -> str:
    """A payload's times are stored as microseconds since the epoch: shown as RFC 3339;
    its digests are shortened unless ``-o wide``."""
    if key.endswith("_time"):
        return micros_time(value)
    return short(value) if value.startswith("sha256:") else value


def deleted(what: str, reply: Any) -> None:
    d = reply.deleted
    console().print(
        f"deleted {_m(what)}: {d.cases} case(s), {d.reviews} review(s), {d.resolutions} "
        f"resolution(s); gold labels and reviewers kept; audit event #{reply.audit_sequence}"
    )

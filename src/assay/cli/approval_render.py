"""Tables and lines for ``assay approval`` (``approval_cmds``).

An approval is shown the way a person deciding on it needs it: what would be done (the
probe, its side effects, the subject and predicate, the candidate's digest), who asks and
why, how many approvals it has of how many needed, until when, and every step with its
actor. Reasons, subjects and every other stored text are untrusted: table cells go through
``print_table``, lines written as markup through ``safe_text.markup``. Enum values are
shown by name without their prefixes, times as RFC 3339 in UTC, digests shortened unless
``-o wide`` (which also adds the request's reason to the list).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf import duration_pb2
from rich.table import Table
from rich.text import Text

from assay.cli.common import console, id_columns, is_wide, print_table, short, stamp_time
from assay.safe_text import markup as _m
from assay.safe_text import text
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import plan_pb2


def _name(enum: Any, number: int, prefix: str) -> str:
    return str(enum.Name(number)).removeprefix(prefix)


def state(approval: pb.Approval) -> str:
    """``PENDING``, ``GRANTED``, …"""
    return _name(pb.ApprovalState, approval.state, "APPROVAL_STATE_")


def _actor(actor: adj.AuditActor) -> str:
    """Who did it ("-": nobody, as for an expiry); the issuer is left to ``-o json``."""
    return actor.subject or "-"


def _approved(approval: pb.Approval) -> str:
    """How many distinct approvers approved, of the quorum (``1/2``)."""
    count = sum(1 for s in approval.steps if s.kind == pb.APPROVAL_STEP_KIND_APPROVED)
    return f"{count}/{approval.quorum}"


def _until(approval: pb.Approval) -> str:
    """The deadline that matters now: the grant's once granted, else the request's."""
    if approval.state == pb.APPROVAL_STATE_GRANTED:
        return stamp_time(approval.grant_expire_time)
    if approval.state == pb.APPROVAL_STATE_PENDING:
        return stamp_time(approval.expire_time)
    return ""


def _duration(value: duration_pb2.Duration) -> str:
    """``15m``, ``2h``, ``90s``: the grant's lifetime as written in a policy."""
    seconds = value.seconds
    if seconds and seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds and seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{seconds}s"


def _effects(candidate: plan_pb2.AcquisitionCandidate) -> str:
    names = [
        _name(plan_pb2.SideEffectClass, e, "SIDE_EFFECT_CLASS_")
        for e in candidate.required_side_effects
    ]
    return ", ".join(names) or "none"


def _probe(candidate: plan_pb2.AcquisitionCandidate) -> str:
    return _name(plan_pb2.ProbeKind, candidate.probe, "PROBE_KIND_")


def _action(approval: pb.Approval) -> str:
    """The probe asked for, or ``table change`` for a reliability table change."""
    return "table change" if approval.HasField("table_change") else _probe(approval.candidate)


def _stacked(*lines: str) -> Text:
    """A cell of several lines, each shown as data (a plain string's newline would be
    escaped, keeping a cell one line)."""
    return Text("\n").join(text(line) for line in lines)


def approvals(found: Sequence[pb.Approval]) -> None:
    """The list, newest request first (the server's order). At 80 columns each row stacks
    the probe under the id and the tenant under the requester; ``-o wide`` gives each its
    own column, adds what the candidate is for, when it was asked and why."""
    if not found:
        console().print("no approvals")
        return
    if not is_wide():
        table = Table("approval / probe", "state / approved", "requester / tenant", "until")
        for a in found:
            table.add_row(
                _stacked(a.approval_id, _action(a)),
                _stacked(state(a), _approved(a)),
                _stacked(_actor(a.requester), a.tenant),
                _until(a),
            )
        print_table(id_columns(table, "approval / probe"))
        return
    table = Table(
        "approval", "state", "tenant", "probe", "requester", "approved", "until", "subject"
    )
    for column in ("predicate", "side effects", "requested", "reason"):
        table.add_column(column)
    for a in found:
        table.add_row(
            a.approval_id,
            state(a),
            a.tenant,
            _action(a),
            _actor(a.requester),
            _approved(a),
            _until(a),
            a.subject,
            a.predicate,
            _effects(a.candidate),
            stamp_time(a.request_time),
            a.reason,
        )
    print_table(id_columns(table, "approval", "requester"))


def detail(approval: pb.Approval) -> None:
    """One approval: what it is for, who asks and why, where it stands, and every step."""
    out = console()
    a, c = approval, approval.candidate
    out.print(f"[bold]{_m(a.approval_id)}[/]  [bold]{state(a)}[/]  tenant {_m(a.tenant)}")
    if a.HasField("table_change"):
        change = a.table_change
        out.print(f"table     reliability table change (checkpoint {change.tree_size or '-'}):")
        out.print(f"  {_m(change.table_digest)}")  # whole, as `assay policy` shows it
        for kind, value in sorted(change.sources.items()):
            out.print(f"          {_m(kind)} = {value!r}")
    else:
        out.print(f"for       {_m(a.subject)} · {_m(a.predicate)}")
        out.print(
            f"candidate {_m(c.candidate_id)}: probe {_probe(c)}, side effects {_effects(c)}, "
            f"digest {_m(short(c.candidate_digest, 23))}"
        )
    out.print(f"requester {_m(_actor(a.requester))}, {stamp_time(a.request_time)}: {_m(a.reason)}")
    ends = "one denial ends it" if a.deny_ends else "denials do not end it"
    out.print(
        f"approved  {_approved(a)} (quorum {a.quorum}; {ends}); pending until "
        f"{stamp_time(a.expire_time)}; a grant lasts {_duration(a.grant_lifetime)}"
    )
    if a.state == pb.APPROVAL_STATE_GRANTED:
        out.print(f"granted   usable once until {stamp_time(a.grant_expire_time)}")
    if not a.steps:
        out.print("no steps yet")
        return
    table = Table("step", "kind", "actor", "time", "reason")
    for number, s in enumerate(a.steps, start=1):
        kind = _name(pb.ApprovalStepKind, s.kind, "APPROVAL_STEP_KIND_")
        table.add_row(str(number), kind, _actor(s.actor), stamp_time(s.occur_time), s.reason)
    print_table(id_columns(table, "actor"), out)


def change(approval: pb.Approval) -> None:
    """One line per change a watch reports: the time, the state, and the latest step."""
    a = approval
    last = ""
    if a.steps:
        s = a.steps[-1]
        kind = _name(pb.ApprovalStepKind, s.kind, "APPROVAL_STEP_KIND_")
        why = f": {_m(s.reason)}" if s.reason else ""
        last = f"  {kind} by {_m(_actor(s.actor))}{why}"
    when = stamp_time(a.steps[-1].occur_time) if a.steps else stamp_time(a.request_time)
    until = _until(a)
    deadline = f" until {until}" if until else ""
    # One line per change however long (the terminal wraps it), so the output reads as a log.
    console().print(
        f"{when}  {_m(a.approval_id)}  [bold]{state(a)}[/]{deadline}  "
        f"approved {_approved(a)}{last}",
        soft_wrap=True,
    )

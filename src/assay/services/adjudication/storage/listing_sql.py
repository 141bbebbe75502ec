"""The statements of ListCases and of filtered ListAuditEvents, written once for both engines.

Each filter a request leaves unset adds no clause, so a statement holds only what
it filters by and the planner sees plain comparisons. The engines differ only in
spelling (``Dialect``): parameter markers, "is one of a list", a JSON payload key.

- ``case_page``: the ids of up to ``limit`` cases after a (creation time, id) key in
  the listing's order, matching the stored columns; the states are derived by the
  caller from each case's checked snapshot.
- ``audit_matches`` and ``audit_extent``: a window of at most ``scan`` events of the
  caller's tenants after a sequence, and the events of it that match the filters,
  and how far the window reached; so a page examines a bounded run of the ledger
  however rarely its filters match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from assay.services.adjudication.domain.audit_filters import AuditWhere
from assay.services.adjudication.domain.case_listing import CaseWhere
from assay.services.adjudication.domain.model import TenantScope
from assay.services.adjudication.domain.times import rfc3339, to_micros
from assay.services.adjudication.storage import assignment_rows, rows


@dataclass(frozen=True)
class Dialect:
    """How an engine spells what these statements need."""

    # The marker of the ``n``-th parameter, named ``name``.
    marker: Callable[[str, int], str]
    # SQL saying ``column`` is one of the texts in list parameter ``marker``.
    one_of: Callable[[str, str], str]
    # A list of texts as that list parameter's value.
    texts: Callable[[Sequence[str]], Any]
    # The audit payload's text at ``key``.
    payload: Callable[[str], str]


class Params:
    """A statement's parameters, named as they are added and marked in the engine's style."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.values: dict[str, Any] = {}

    def mark(self, name: str, value: Any) -> str:
        if name not in self.values:
            self.values[name] = value
        return self.dialect.marker(name, list(self.values).index(name) + 1)

    def positional(self) -> list[Any]:
        return list(self.values.values())


def _in_scope(column: str, scope: TenantScope, params: Params) -> list[str]:
    if scope.tenants is None:
        return []
    tenants = params.dialect.texts(sorted(scope.tenants))
    return [params.dialect.one_of(column, params.mark("tenants", tenants))]


def _where(clauses: list[str]) -> str:
    return " AND ".join(clauses) if clauses else "1 = 1"


def assigned_to(reviewer_id: str, params: Params) -> str:
    """Cases assigned to ``reviewer_id`` now (``assignment_rows``: the latest row of the
    case and reviewer adds them); each listed case's rows are checked as it is read."""
    return assignment_rows.assigned_to("c.case_id", params.mark("assigned", reviewer_id))


def case_page(
    where: CaseWhere,
    after: tuple[str, int] | None,
    limit: int,
    scope: TenantScope,
    dialect: Dialect,
) -> tuple[str, Params]:
    """The ids of up to ``limit`` cases of ``scope`` after ``after`` (case id, creation time
    in microseconds) that ``where`` keeps, by creation time then id (both descending for
    newest first)."""
    params = Params(dialect)
    clauses = _in_scope("c.tenant", scope, params)
    if where.predicate:
        clauses.append(f"c.predicate = {params.mark('predicate', where.predicate)}")
    if where.create_after is not None:
        clauses.append(f"c.create_time >= {params.mark('from', to_micros(where.create_after))}")
    if where.create_before is not None:
        clauses.append(f"c.create_time < {params.mark('to', to_micros(where.create_before))}")
    if where.assigned_reviewer_id:
        clauses.append(assigned_to(where.assigned_reviewer_id, params))
    direction, beyond = ("DESC", "<") if where.newest_first else ("ASC", ">")
    if after is not None:
        case_id, created = after
        time = params.mark("after_time", created)
        clauses.append(
            f"(c.create_time {beyond} {time} OR (c.create_time = {time} "
            f"AND c.case_id {beyond} {params.mark('after_id', case_id)}))"
        )
    sql = (
        f"SELECT c.case_id FROM cases c WHERE {_where(clauses)} "
        f"ORDER BY c.create_time {direction}, c.case_id {direction} "
        f"LIMIT {params.mark('limit', limit)}"
    )
    return sql, params


def _window(where: AuditWhere, after: int, scan: int, scope: TenantScope, params: Params) -> str:
    """The window ``w``: up to ``scan`` events of ``scope`` after sequence ``after`` (before
    it, newest first; 0: from the start) in the listing's order."""
    clauses = _in_scope("tenant", scope, params)
    direction = "DESC" if where.newest_first else "ASC"
    if where.newest_first and after:
        clauses.append(f"sequence < {params.mark('after', after)}")
    elif not where.newest_first:
        clauses.append(f"sequence > {params.mark('after', after)}")
    return (
        f"WITH w AS (SELECT {rows.AUDIT_COLUMNS} FROM audit_events WHERE {_where(clauses)} "
        f"ORDER BY sequence {direction} LIMIT {params.mark('scan', scan)})"
    )


def audit_matches(
    where: AuditWhere, after: int, scan: int, limit: int, scope: TenantScope, dialect: Dialect
) -> tuple[str, Params]:
    """Up to ``limit`` events of the window (``_window``) that ``where`` keeps, in order."""
    params = Params(dialect)
    window = _window(where, after, scan, scope, params)
    clauses: list[str] = []
    if where.event_types:
        types = dialect.texts(sorted(t.value for t in where.event_types))
        clauses.append(dialect.one_of("w.event_type", params.mark("types", types)))
    if where.actor_subject:
        clauses.append(f"w.actor_subject = {params.mark('actor', where.actor_subject)}")
    if where.case_id:
        clauses.append(f"{dialect.payload('case_id')} = {params.mark('case', where.case_id)}")
    # Stored as ``rfc3339`` text, one width for every instant: compared as text.
    if where.occur_after is not None:
        clauses.append(f"w.occur_time >= {params.mark('from', rfc3339(where.occur_after))}")
    if where.occur_before is not None:
        clauses.append(f"w.occur_time < {params.mark('to', rfc3339(where.occur_before))}")
    direction = "DESC" if where.newest_first else "ASC"
    sql = (
        f"{window} SELECT {rows.AUDIT_COLUMNS} FROM w WHERE {_where(clauses)} "
        f"ORDER BY sequence {direction} LIMIT {params.mark('limit', limit)}"
    )
    return sql, params


def audit_extent(
    where: AuditWhere, after: int, scan: int, scope: TenantScope, dialect: Dialect
) -> tuple[str, Params]:
    """How many events the window holds (``examined``) and the sequence it reached
    (``reached``: its last in the listing's order)."""
    params = Params(dialect)
    window = _window(where, after, scan, scope, params)
    last = "MIN" if where.newest_first else "MAX"
    return f"{window} SELECT COUNT(*) AS examined, {last}(sequence) AS reached FROM w", params

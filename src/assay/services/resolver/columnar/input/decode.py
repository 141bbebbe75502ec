"""From the checked Arrow table to ``ClaimColumns``: factorized, validated, weighed.

The decoding is column by column (Arrow and NumPy), and so is validation: each rule of
``claim_rules.CLAIM_RULES`` is one mask over the rows (``MASKS``). Only the rows some mask
flags are then explained, one by one, by ``checks`` (walking the same table, so the
descriptions and reasons are the reference's, with ``claims_arrow.<column>[<row>]`` paths).
Ids are checked for duplicates by sorting fingerprints (``distinct``) and relation
targets looked up by probing the ids against the few distinct targets, with no
Python-level loop over the rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from assay.prototime import MAX_TIMESTAMP_SECONDS, MIN_TIMESTAMP_SECONDS
from assay.services.resolver.columnar.input import checks, distinct
from assay.services.resolver.columnar.input.columns import (
    ABSENT,
    Bools,
    Coded,
    Floats,
    Ints,
    Plain,
    Times,
    coded,
    dense,
    floats,
    ints,
    plain,
    ranks,
    times,
)
from assay.services.resolver.columnar.input.texts import key_texts
from assay.services.resolver.domain import claim_rules as rules
from assay.services.resolver.domain.claim_rules import Violation
from assay.services.resolver.domain.model import RelationKind, ReviewStatus


@dataclass(frozen=True, slots=True)
class ClaimColumns:
    """Valid claims, one entry per request row: what the engine resolves."""

    count: int
    semantic: Ints  # row -> semantic, semantics in (subject, predicate) order
    subjects: pa.Array  # semantic -> subject
    predicates: pa.Array  # semantic -> predicate
    value: Ints  # row -> value, values in value_key order
    value_keys: list[str]
    source: Ints  # row -> index into ``sources``
    sources: list[str]
    ceiling: Floats  # the table's reliability of the row's source
    stated: Floats  # the reliability the claim stated; NaN when it stated none
    confidence: Floats
    group: Ints  # row -> correlation group (declared, or source + "|" + source_ref)
    groups: pa.Array  # group -> its name
    declared: Bools
    observed: Floats  # observe_time in seconds since the epoch, NaN when absent; empty
    # unless staleness was asked for (the engine reads it only then)
    rejected: Bools
    ids: Plain
    relation: Ints  # RelationKind number; 0 without a relation
    targets: Coded  # relation_target
    target_row: Ints  # the row whose id the relation targets; -1 when none is


@dataclass(frozen=True, slots=True)
class RawColumns:
    """Every column as read, before anything is rejected (what ``checks`` explains)."""

    count: int
    subject: Coded
    predicate: Coded
    value: Coded
    value_of_text: Ints
    value_keys: list[str]
    value_problems: dict[int, tuple[str, str]]
    source: Coded
    known: Ints  # source code -> index into the policy's sources, -1 when unknown
    sources: list[str]
    source_ref: Coded
    group: Coded
    ids: Plain
    targets: Coded
    target_row: Ints
    duplicate_of: Ints  # the first row with the same id; -1 when the id is its first use
    confidence: Floats
    confidence_null: Bools
    reliability: Floats  # NaN when null
    reliability_null: Bools
    observe: Times
    review: Ints
    kind: Ints
    kind_null: Bools


def read_raw(table: pa.Table, reliability: dict[str, float]) -> RawColumns:
    """Decode every column of a schema-checked table."""
    n = table.num_rows
    names = set(table.column_names)

    def column(name: str) -> pa.Array | None:
        if name not in names:
            return None
        found = table.column(name)
        return found.chunk(0) if found.num_chunks == 1 else found.combine_chunks()

    def strings(name: str) -> Coded:
        found = column(name)
        if found is None:
            return Coded(np.full(n, ABSENT, dtype=np.int64), pa.array([], pa.string()))
        return coded(found)

    value = strings("value")
    keyed = key_texts(value.strings.to_pylist())
    source = strings("source")
    sources = sorted(reliability)
    position = {name: i for i, name in enumerate(sources)}
    known = np.array(
        [position.get(name, -1) for name in source.strings.to_pylist()], dtype=np.int64
    )
    ids, targets, target_row, duplicate_of = _ids(column("id"), column("relation_target"), n)
    confidence_column = column("confidence")
    assert confidence_column is not None  # required: the schema check saw it
    confidence, confidence_null = floats(confidence_column)
    stated_column = column("reliability")
    if stated_column is not None:
        stated, stated_null = floats(stated_column)
    else:
        stated, stated_null = np.full(n, np.nan), np.ones(n, dtype=np.bool_)
    observe_column = column("observe_time")
    if observe_column is not None:
        observe = times(observe_column)
    else:
        observe = Times(np.zeros(n, dtype=np.int64), 1, np.zeros(n, dtype=np.bool_))
    review_column = column("review_status")
    review = ints(review_column, 0)[0] if review_column is not None else np.zeros(n, np.int64)
    kind_column = column("relation_kind")
    if kind_column is not None:
        kind, kind_null = ints(kind_column, 0)
    else:
        kind, kind_null = np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.bool_)
    # Grouped by the input column each is read from.
    return RawColumns(
        count=n,
        subject=strings("subject"),
        predicate=strings("predicate"),
        value=value, value_of_text=keyed.value_of_text, value_keys=keyed.keys,
        value_problems=keyed.problems,
        source=source, known=known, sources=sources,
        source_ref=strings("source_ref"),
        group=strings("correlation_group"),
        ids=ids, duplicate_of=duplicate_of,
        targets=targets, target_row=target_row,
        confidence=confidence, confidence_null=confidence_null,
        reliability=stated, reliability_null=stated_null,
        observe=observe,
        review=review,
        kind=kind, kind_null=kind_null,
    )  # fmt: skip


def _ids(
    id_column: pa.Array | None, target_column: pa.Array | None, n: int
) -> tuple[Plain, Coded, Ints, Ints]:
    """The ids, target codes, each target's row, and each repeated id's first row.

    Ids are normally unique, so ``distinct`` only answers whether any repeats; the rows
    of repeats are looked for only when one does (an invalid request). Targets are few,
    so they are found by probing each id against their distinct strings."""
    absent = np.full(n, ABSENT, dtype=np.int64)
    empty = pa.array([], pa.string())
    targets = coded(target_column) if target_column is not None else Coded(absent, empty)
    if id_column is None:
        return Plain(pa.nulls(n, pa.string()), np.zeros(n, dtype=np.bool_)), targets, absent, absent
    ids = plain(id_column)
    column = ids.column
    duplicate_of = absent
    if distinct.has_repeats(column, ids.present):
        duplicate_of = _repeats(coded(column), n)
    target_row = absent
    if len(targets.strings):
        which = pc.index_in(column, value_set=targets.strings.cast(column.type))
        rows = np.flatnonzero(which.is_valid().to_numpy(zero_copy_only=False) & ids.present)
        hits = np.asarray(which.take(rows).to_numpy(zero_copy_only=False), dtype=np.int64)
        row_of_target = np.full(len(targets.strings) + 1, ABSENT, dtype=np.int64)
        # Reversed, so the first row with a repeated id wins (the request is invalid then).
        row_of_target[hits[::-1]] = rows[::-1]
        target_row = row_of_target[targets.codes]  # code -1 (no target) reads the last slot
    return ids, targets, target_row, duplicate_of


def _repeats(ids: Coded, n: int) -> Ints:
    """For each row whose id an earlier row has, that earlier row's number; else -1."""
    rows = np.flatnonzero(ids.present)
    codes = ids.codes[rows]
    first = np.full(len(ids.strings) + 1, -1, dtype=np.int64)
    first[codes[::-1]] = rows[::-1]  # reversed: the lowest row of each id wins
    duplicate_of = np.full(n, ABSENT, dtype=np.int64)
    repeated = first[codes] != rows
    duplicate_of[rows[repeated]] = first[codes[repeated]]
    return duplicate_of


Mask = Callable[["RawColumns"], Bools]


def _has_relation(raw: RawColumns) -> Bools:
    return ~raw.kind_null | raw.targets.present


def _unit(values: Floats) -> Bools:
    return (values >= 0.0) & (values <= 1.0)  # NaN compares False: outside


# Review statuses are numbered without gaps, so a range check is a membership check.
_REVIEW_LOW, _REVIEW_HIGH = min(ReviewStatus), max(ReviewStatus)
assert len(ReviewStatus) == _REVIEW_HIGH - _REVIEW_LOW + 1

# Each rule of ``claim_rules`` as one mask over the rows: the rows that break it. A test
# holds every rule of the table to a mask here, and each mask to its rule's scalar check.
MASKS: dict[rules.ClaimRule, Mask] = {
    rules.SUBJECT_REQUIRED: lambda raw: ~raw.subject.present,
    rules.PREDICATE_REQUIRED: lambda raw: ~raw.predicate.present,
    rules.VALUE_REQUIRED: lambda raw: ~raw.value.present,
    rules.VALUE_KEYABLE: lambda raw: _marked(raw.value, raw.value_of_text == ABSENT),
    rules.SOURCE_REQUIRED: lambda raw: ~raw.source.present,
    rules.SOURCE_KNOWN: lambda raw: _marked(raw.source, raw.known == ABSENT),
    rules.CONFIDENCE_REQUIRED: lambda raw: raw.confidence_null,
    rules.CONFIDENCE_UNIT: lambda raw: ~raw.confidence_null & ~_unit(raw.confidence),
    rules.RELIABILITY_UNIT: lambda raw: ~raw.reliability_null & ~_unit(raw.reliability),
    rules.OBSERVE_TIME_VALID: lambda raw: raw.observe.outside(
        MIN_TIMESTAMP_SECONDS, MAX_TIMESTAMP_SECONDS
    ),
    rules.REVIEW_STATUS_KNOWN: lambda raw: (raw.review < _REVIEW_LOW) | (raw.review > _REVIEW_HIGH),
    rules.RELATION_NEEDS_ID: lambda raw: _has_relation(raw) & ~raw.ids.present,
    rules.RELATION_KIND_REQUIRED: lambda raw: (
        _has_relation(raw) & ((raw.kind < 1) | (raw.kind > max(RelationKind)))
    ),
    rules.RELATION_TARGET_REQUIRED: lambda raw: _has_relation(raw) & ~raw.targets.present,
    rules.ID_UNIQUE: lambda raw: raw.duplicate_of != ABSENT,
}


def violations(raw: RawColumns, reliability: dict[str, float]) -> list[Violation]:
    """Every violation, row by row, as ``validation.check_claims`` lists them."""
    bad = np.zeros(raw.count, dtype=np.bool_)
    for mask in MASKS.values():
        bad |= mask(raw)
    return checks.explain(raw, np.flatnonzero(bad), reliability) if bad.any() else []


def _marked(column: Coded, rejected: Bools) -> Bools:
    """The rows whose string is one of the distinct strings ``rejected`` marks: the
    strings are few, so the rows are looked up only when some string is rejected."""
    if not rejected.any():
        return np.zeros(len(column.codes), dtype=np.bool_)
    return np.append(rejected, False)[column.codes]  # code -1 (absent) reads the False


def columns(raw: RawColumns, reliability: dict[str, float], *, stale: bool = True) -> ClaimColumns:
    """The engine's view of valid claims (``violations`` found nothing); observe times in
    seconds only when staleness is asked for (``stale``)."""
    n = raw.count
    subject_rank = ranks(raw.subject.strings)
    predicate_rank = ranks(raw.predicate.strings)
    predicates = len(predicate_rank)
    composite = subject_rank[raw.subject.codes] * predicates + predicate_rank[raw.predicate.codes]
    semantic, keys = dense(composite, max(1, len(subject_rank) * predicates))
    subject_order = np.argsort(subject_rank)
    predicate_order = np.argsort(predicate_rank)
    subjects = raw.subject.strings.take(pa.array(subject_order[keys // max(1, predicates)]))
    predicate_names = raw.predicate.strings.take(
        pa.array(predicate_order[keys % max(1, predicates)])
    )
    source = raw.known[raw.source.codes]
    table = np.array([reliability[name] for name in raw.sources], dtype=np.float64)
    group, groups, declared = _groups(raw, source, n)
    observed = np.zeros(0)
    if stale:
        seconds, nanos = raw.observe.seconds_nanos()
        observed = np.where(raw.observe.present, seconds + nanos / 1e9, np.nan)
    relation = np.where(raw.kind_null & ~raw.targets.present, 0, raw.kind)
    return ClaimColumns(
        count=n,
        semantic=semantic,
        subjects=subjects,
        predicates=predicate_names,
        value=raw.value_of_text[raw.value.codes],
        value_keys=raw.value_keys,
        source=source,
        sources=raw.sources,
        ceiling=table[source] if n else np.zeros(0),
        stated=raw.reliability,
        confidence=raw.confidence,
        group=group,
        groups=groups,
        declared=declared,
        observed=observed,
        rejected=raw.review == ReviewStatus.REJECTED,
        ids=raw.ids,
        relation=relation,
        targets=raw.targets,
        target_row=raw.target_row,
    )


def _groups(raw: RawColumns, source: Ints, n: int) -> tuple[Ints, pa.Array, Bools]:
    """Each row's correlation group: declared, else ``source + "|" + source_ref``.

    Groups are named strings: a declared group spelled like a defaulted one is that
    group, as in the reference. The defaulted names are built once per distinct
    (source, source_ref) pair, then joined with the declared names in one hash pass."""
    declared = raw.group.present
    refs = len(raw.source_ref.strings) + 1
    # Each defaulted row's (source, source_ref) pair; declared rows share one pair past
    # every real one, whose code is then the last and is dropped.
    past = len(raw.sources) * refs
    pair = np.where(declared, past, source * refs + (raw.source_ref.codes + 1))
    pair_code, pairs = dense(pair, past + 1)
    if len(pairs) and pairs[-1] == past:
        pairs = pairs[:-1]
    names = pa.array(raw.sources, pa.large_string()).take(pa.array(pairs // refs))
    ref_names = pa.concat_arrays(
        [pa.array([""], pa.large_string()), raw.source_ref.strings.cast(pa.large_string())]
    ).take(pa.array(pairs % refs))
    made = pc.binary_join_element_wise(names, ref_names, pa.scalar("|", pa.large_string()))
    declared_names = raw.group.strings.cast(pa.large_string())
    both = coded(pa.concat_arrays([declared_names, made]))
    # One code space: declared names first, then the defaulted pairs.
    unified = np.append(both.codes, ABSENT)  # the dropped pair reads ABSENT, never kept
    group = unified[np.where(declared, raw.group.codes, len(declared_names) + pair_code)]
    return group, both.strings.cast(pa.string()), declared

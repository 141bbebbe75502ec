"""Table definitions both engines' schemas declare alike, written once.

SQLite (``storage.sqlite.schema``) and PostgreSQL (``storage.postgres.schema``)
hold the same tables at the same schema version; where a definition differs
only in the name of a type, it is here with that type as an argument:
``micros``, the column type of a timestamp stored as microseconds since the
epoch (SQLite ``INTEGER``, PostgreSQL ``BIGINT``), and ``blob``, of raw bytes
(``BLOB``, ``BYTEA``). The audit ledger's partial indexes are listed here once,
each engine passing its own expression for a JSON payload key. What differs in
kind (triggers, SQLite's ``rowid`` against PostgreSQL's identity column) stays
with each engine.

These texts are part of migrations already applied to databases: a change here
would change what an old version means. A new version adds statements of its
own instead.
"""

from __future__ import annotations

from collections.abc import Callable


def reviewers(micros: str) -> str:
    """Version 1's ``reviewers`` table (its triggers are each engine's)."""
    return f"""CREATE TABLE reviewers (
    reviewer_id   TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('HUMAN', 'MECHANISM_TEST_FIXTURE')),
    attested_by   TEXT NOT NULL,
    register_time {micros} NOT NULL,
    CHECK (kind <> 'HUMAN' OR length(trim(attested_by)) > 0)
);"""


def cases(micros: str) -> str:
    """Version 1's ``cases`` table and its indexes."""
    return f"""CREATE TABLE cases (
    case_id          TEXT PRIMARY KEY,
    tenant           TEXT NOT NULL CHECK (length(tenant) > 0),
    subject          TEXT NOT NULL,
    predicate        TEXT NOT NULL,
    candidate_values TEXT NOT NULL,
    evidence_refs    TEXT NOT NULL,
    context          TEXT NOT NULL,
    local_verdict    TEXT NOT NULL,
    lineage_origin   TEXT NOT NULL,
    lineage_ref      TEXT NOT NULL,
    create_time      {micros} NOT NULL,
    expire_time      {micros} NOT NULL,
    content_digest   TEXT NOT NULL
);
CREATE INDEX cases_by_tenant ON cases (tenant, case_id);
CREATE INDEX cases_by_expiry ON cases (expire_time);"""


def reviews(micros: str, order_column: str = "") -> str:
    """Version 1's ``reviews`` table; ``order_column``: the definition of a column recording
    the order reviews were written in, where the engine has no ``rowid`` (PostgreSQL)."""
    order = f"\n    {order_column}," if order_column else ""
    return f"""CREATE TABLE reviews (
    review_id   TEXT PRIMARY KEY,
    case_id     TEXT NOT NULL REFERENCES cases (case_id) ON DELETE CASCADE,
    reviewer_id TEXT NOT NULL REFERENCES reviewers (reviewer_id),
    round       INTEGER NOT NULL CHECK (round >= 1),
    outcome     TEXT NOT NULL CHECK (outcome IN ('LABEL', 'UNRESOLVED', 'NOT_EVALUABLE')),
    label_key   TEXT NOT NULL,
    reason      TEXT NOT NULL,
    submit_time {micros} NOT NULL,{order}
    UNIQUE (case_id, round, reviewer_id),
    CHECK ((outcome = 'LABEL') = (label_key <> ''))
);"""


def resolutions(micros: str) -> str:
    """Version 1's ``resolutions`` table."""
    return f"""CREATE TABLE resolutions (
    case_id                 TEXT NOT NULL REFERENCES cases (case_id) ON DELETE CASCADE,
    round                   INTEGER NOT NULL CHECK (round >= 1),
    basis                   TEXT NOT NULL CHECK (basis IN
        ('UNANIMOUS_AGREEMENT', 'ADJUDICATOR_DECISION', 'UNRESOLVED', 'NOT_EVALUABLE')),
    label_key               TEXT NOT NULL,
    adjudicator_reviewer_id TEXT NOT NULL,
    review_ids              TEXT NOT NULL CHECK (review_ids <> '[]'),
    resolve_time            {micros} NOT NULL,
    PRIMARY KEY (case_id, round)
);"""


# Version 1's ``gold_labels`` table (its SQL comment is part of the migration's text).
GOLD_LABELS = """-- No foreign key to cases: a gold label outlives its case (tenant deletion).
CREATE TABLE gold_labels (
    case_id                   TEXT NOT NULL,
    revision                  INTEGER NOT NULL CHECK (revision >= 1),
    previous_revision         INTEGER NOT NULL CHECK (previous_revision = revision - 1),
    round                     INTEGER NOT NULL,
    tenant                    TEXT NOT NULL,
    basis                     TEXT NOT NULL,
    label_key                 TEXT NOT NULL,
    contributing_review_ids   TEXT NOT NULL CHECK (contributing_review_ids <> '[]'),
    contributing_reviewer_ids TEXT NOT NULL,
    adjudicator_reviewer_id   TEXT NOT NULL,
    provenance                TEXT NOT NULL
        CHECK (provenance IN ('HUMAN_ADJUDICATED', 'SYNTHETIC_MECHANISM_TEST')),
    freeze_time               TEXT NOT NULL,
    digest                    TEXT NOT NULL,
    PRIMARY KEY (case_id, revision)
);"""


def idempotency_v1(micros: str, blob: str) -> str:
    """Version 1's ``idempotency`` table, keyed by request id alone (replaced in version 2)."""
    return f"""CREATE TABLE idempotency (
    request_id     TEXT PRIMARY KEY,
    method         TEXT NOT NULL,
    request_digest TEXT NOT NULL,
    response       {blob} NOT NULL,
    tenant         TEXT NOT NULL,
    case_id        TEXT NOT NULL,
    create_time    {micros} NOT NULL
);"""


def idempotency(table: str, micros: str, blob: str) -> str:
    """Version 2's ``idempotency`` table, keyed per caller, created as ``table``."""
    return f"""CREATE TABLE {table} (
    caller_issuer  TEXT NOT NULL,
    caller_subject TEXT NOT NULL,
    request_id     TEXT NOT NULL,
    method         TEXT NOT NULL,
    request_digest TEXT NOT NULL,
    response       {blob} NOT NULL,
    tenant         TEXT NOT NULL,
    case_id        TEXT NOT NULL,
    create_time    {micros} NOT NULL,
    PRIMARY KEY (caller_issuer, caller_subject, request_id)
);"""


# Version 2's indexes of the retry records, by what tenant deletion and sweeps remove.
IDEMPOTENCY_INDEXES = """CREATE INDEX idempotency_by_tenant ON idempotency (tenant);
CREATE INDEX idempotency_by_case ON idempotency (case_id);"""

# Version 5: which canonical form each stored digest was computed with (rows before it: v1).
DIGEST_VERSIONS = """
ALTER TABLE cases ADD COLUMN digest_version TEXT NOT NULL DEFAULT 'assay.case.v1';
ALTER TABLE gold_labels ADD COLUMN digest_version TEXT NOT NULL DEFAULT 'assay.gold.v1';
"""

# The partial indexes of audit events by a payload key: (index, key, event type). Version 3's
# are what a freeze looks up, version 4's what a checked read of a gold label or case does.
AUDIT_LOOKUPS_V3 = (
    ("audit_review_events", "review_id", "REVIEW_SUBMITTED"),
    ("audit_resolution_events", "case_id", "CASE_RESOLVED"),
    ("audit_reviewer_events", "reviewer_id", "REVIEWER_REGISTERED"),
)
AUDIT_LOOKUPS_V4 = (
    ("audit_gold_events", "case_id", "GOLD_LABEL_FROZEN"),
    ("audit_case_events", "case_id", "CASE_ENQUEUED"),
)


def audit_lookups(lookups: tuple[tuple[str, str, str], ...], payload: Callable[[str], str]) -> str:
    """The ``lookups`` as one migration; ``payload(key)``: the engine's expression for the
    payload's text at ``key``."""
    return "\n" + "".join(
        f"CREATE INDEX {name} ON audit_events ({payload(key)})\n"
        f"    WHERE event_type = '{event_type}';\n"
        for name, key, event_type in lookups
    )


# V6: approvals and their steps (``approval_rows``), insert-only; both dialects spell
# TEXT, BIGINT and INTEGER alike, and deny_ends is 0 or 1.
APPROVALS = """
CREATE TABLE approvals (
    approval_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    candidate_id TEXT NOT NULL,
    probe TEXT NOT NULL,
    target_signal_class TEXT NOT NULL,
    availability TEXT NOT NULL,
    required_side_effects TEXT NOT NULL,
    missing_grants TEXT NOT NULL,
    blocking_reasons TEXT NOT NULL,
    candidate_digest TEXT NOT NULL,
    candidate_detail TEXT NOT NULL,
    requester_issuer TEXT NOT NULL,
    requester_subject TEXT NOT NULL,
    reason TEXT NOT NULL,
    request_time BIGINT NOT NULL,
    expire_time BIGINT NOT NULL,
    grant_lifetime_micros BIGINT NOT NULL,
    quorum INTEGER NOT NULL,
    deny_ends INTEGER NOT NULL,
    content_digest TEXT NOT NULL
);
CREATE INDEX approvals_by_tenant_newest ON approvals (tenant, request_time DESC, approval_id DESC);
CREATE INDEX approvals_newest ON approvals (request_time DESC, approval_id DESC);
CREATE TABLE approval_steps (
    approval_id TEXT NOT NULL REFERENCES approvals (approval_id),
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    actor_issuer TEXT NOT NULL,
    actor_subject TEXT NOT NULL,
    reason TEXT NOT NULL,
    occur_time BIGINT NOT NULL,
    candidate_digest TEXT NOT NULL,
    PRIMARY KEY (approval_id, seq)
);
"""
# What reading an approval looks up in the ledger: its request's and its steps' events.
AUDIT_LOOKUPS_V6 = (
    ("audit_approval_requested", "approval_id", "APPROVAL_REQUESTED"),
    ("audit_approval_decided", "approval_id", "APPROVAL_DECIDED"),
    ("audit_approval_revoked", "approval_id", "APPROVAL_REVOKED"),
    ("audit_approval_consumed", "approval_id", "APPROVAL_CONSUMED"),
    ("audit_approval_expired", "approval_id", "APPROVAL_EXPIRED"),
)

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


# V7, review work as teams run it: each case's reviews per round (2 for older cases); a
# review's rationale and the record it supersedes (NULL for a first submission: UNIQUE then
# admits one successor per record); a resolution's rationale. A reviewer's first record in
# a round stays unique per (case, round, reviewer); later ones amend or withdraw it.
def reviews_v7(table: str, micros: str, order_column: str = "") -> str:
    """Version 7's ``reviews`` table, created as ``table``: version 1's with the outcome
    WITHDRAWN, ``salt``, ``rationale`` and ``supersedes``, and no UNIQUE over
    (case, round, reviewer) (``REVIEW_INDEXES_V7`` restates it for first submissions)."""
    order = f"\n    {order_column}," if order_column else ""
    return f"""CREATE TABLE {table} (
    review_id   TEXT PRIMARY KEY,
    case_id     TEXT NOT NULL REFERENCES cases (case_id) ON DELETE CASCADE,
    reviewer_id TEXT NOT NULL REFERENCES reviewers (reviewer_id),
    round       INTEGER NOT NULL CHECK (round >= 1),
    outcome     TEXT NOT NULL
        CHECK (outcome IN ('LABEL', 'UNRESOLVED', 'NOT_EVALUABLE', 'WITHDRAWN')),
    label_key   TEXT NOT NULL,
    reason      TEXT NOT NULL,
    submit_time {micros} NOT NULL,{order}
    salt        TEXT NOT NULL DEFAULT '',
    rationale   TEXT NOT NULL DEFAULT '',
    supersedes  TEXT,
    CHECK ((outcome = 'LABEL') = (label_key <> ''))
);"""


REVIEW_INDEXES_V7 = """
CREATE UNIQUE INDEX reviews_first_per_round ON reviews (case_id, round, reviewer_id)
    WHERE supersedes IS NULL;
CREATE UNIQUE INDEX reviews_one_successor ON reviews (supersedes);
CREATE INDEX reviews_by_round ON reviews (case_id, round, reviewer_id);
"""

CASES_RESOLUTIONS_V7 = """
ALTER TABLE cases ADD COLUMN required_reviews INTEGER NOT NULL DEFAULT 2
    CHECK (required_reviews BETWEEN 2 AND 10);
ALTER TABLE resolutions ADD COLUMN rationale TEXT NOT NULL DEFAULT '';
"""


def review_views(position: str) -> str:
    """The reviews that count, as views every query of them reads: ``current_reviews``, the
    records no later record supersedes (each reviewer's latest, withdrawals included), and
    ``final_reviews``, those that are not withdrawals. ``position``: the engine's expression
    for the order records were stored in, exposed as the column ``position``."""
    return f"""
CREATE VIEW current_reviews AS
    SELECT {position}, r.review_id, r.case_id, r.reviewer_id, r.round, r.outcome, r.label_key,
           r.reason, r.submit_time, r.salt, r.rationale, r.supersedes
    FROM reviews r
    WHERE NOT EXISTS (SELECT 1 FROM reviews s WHERE s.supersedes = r.review_id);
CREATE VIEW final_reviews AS
    SELECT * FROM current_reviews WHERE outcome <> 'WITHDRAWN';
"""


# V8: case assignment changes (``assignment_rows``), a row per reviewer a change added or
# removed; insert-only, deleted only with their case (each engine's triggers). No foreign
# key: the rows go after their case, in the same transaction.
ASSIGNMENTS = """
CREATE TABLE case_assignments (
    case_id TEXT NOT NULL,
    change INTEGER NOT NULL CHECK (change >= 1),
    reviewer_id TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('ADD', 'REMOVE')),
    tenant TEXT NOT NULL,
    PRIMARY KEY (case_id, change, reviewer_id)
);
CREATE INDEX case_assignments_by_reviewer ON case_assignments (reviewer_id, case_id, change);
CREATE INDEX case_assignments_latest ON case_assignments (case_id, reviewer_id, change);
"""
# What reading an assignment looks up in the ledger: its changes' events, by case.
AUDIT_LOOKUPS_V8 = (
    ("audit_case_assigned", "case_id", "CASE_ASSIGNED"),
    ("audit_case_unassigned", "case_id", "CASE_UNASSIGNED"),
    ("audit_case_reassigned", "case_id", "CASE_REASSIGNED"),
)


def case_claims_v9(real: str) -> str:
    """Version 9: the claims each case was raised from (``case_claims.claims_json``, as
    canonical JSON) and its spot-check rate (``real``: the engine's double type)."""
    return f"""
ALTER TABLE cases ADD COLUMN claims TEXT NOT NULL DEFAULT '[]';
ALTER TABLE cases ADD COLUMN spot_check_rate {real} NOT NULL DEFAULT 0
    CHECK (spot_check_rate >= 0 AND spot_check_rate <= 1);
"""

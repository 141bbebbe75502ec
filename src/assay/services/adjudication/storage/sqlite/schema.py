"""The adjudication schema and its migrations, applied at start through ``PRAGMA user_version``.

The rules that make the corpus trustworthy are enforced here too, not only in
code: a revision below 1, a second revision at the same (case, revision), a
second review by a reviewer in a round, a HUMAN reviewer without attestation,
any UPDATE or DELETE of a gold label or an audit event, and any UPDATE or
DELETE of a reviewer (V2) are refused by SQLite itself. Migrations are
append-only: version N is ``MIGRATIONS[N-1]``.
"""

from __future__ import annotations

from assay.services.adjudication.storage import ddl


def _payload(key: str) -> str:
    """The audit payload's text at ``key`` (an index expression)."""
    return f"json_extract(payload, '$.{key}')"


_V1 = f"""
{ddl.reviewers("INTEGER")}
CREATE TRIGGER reviewers_no_delete BEFORE DELETE ON reviewers
BEGIN SELECT RAISE(ABORT, 'reviewers are never deleted'); END;

{ddl.cases("INTEGER")}

{ddl.reviews("INTEGER")}

{ddl.resolutions("INTEGER")}

{ddl.GOLD_LABELS}
CREATE TRIGGER gold_labels_no_update BEFORE UPDATE ON gold_labels
BEGIN SELECT RAISE(ABORT, 'gold labels are insert-only'); END;
CREATE TRIGGER gold_labels_no_delete BEFORE DELETE ON gold_labels
BEGIN SELECT RAISE(ABORT, 'gold labels are insert-only'); END;

CREATE TABLE audit_events (
    sequence      INTEGER PRIMARY KEY CHECK (sequence >= 1),
    event_type    TEXT NOT NULL,
    occur_time    TEXT NOT NULL,
    payload       TEXT NOT NULL,
    previous_hash TEXT NOT NULL,
    hash          TEXT NOT NULL
);
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN SELECT RAISE(ABORT, 'the audit ledger is append-only'); END;
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN SELECT RAISE(ABORT, 'the audit ledger is append-only'); END;

-- The first response to each request_id, so a retry returns it unchanged.
-- tenant / case_id let tenant deletion and sweeps remove responses holding case data.
{ddl.idempotency_v1("INTEGER", "BLOB")}
{ddl.IDEMPOTENCY_INDEXES}
"""

# V2, the trust boundary: reviewers bound to an authenticated identity; a per-review salt for
# the audit commitment to its answer; each audit event's tenant (what ListAuditEvents filters
# on; not hashed: the payload it is derived from is) and actor (hashed when set); request ids
# keyed per caller. Events written before V2 get their tenant from their payload, or from
# their case's CASE_ENQUEUED event (which names it even after the case is deleted).
_V2 = f"""
ALTER TABLE reviewers ADD COLUMN identity_issuer TEXT NOT NULL DEFAULT '';
ALTER TABLE reviewers ADD COLUMN identity_subject TEXT NOT NULL DEFAULT '';
CREATE TRIGGER reviewers_no_update BEFORE UPDATE ON reviewers
BEGIN SELECT RAISE(ABORT, 'reviewers are never changed'); END;

ALTER TABLE reviews ADD COLUMN salt TEXT NOT NULL DEFAULT '';

ALTER TABLE audit_events ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_events ADD COLUMN actor_issuer TEXT;
ALTER TABLE audit_events ADD COLUMN actor_subject TEXT;
CREATE TEMP TABLE enqueued AS
    SELECT json_extract(payload, '$.case_id') AS case_id,
           json_extract(payload, '$.tenant') AS tenant
    FROM audit_events WHERE event_type = 'CASE_ENQUEUED';
CREATE INDEX temp.enqueued_by_case ON enqueued (case_id);
DROP TRIGGER audit_events_no_update;
UPDATE audit_events SET tenant = COALESCE(
    json_extract(payload, '$.tenant'),
    (SELECT e.tenant FROM temp.enqueued e
      WHERE e.case_id = json_extract(audit_events.payload, '$.case_id')),
    '')
WHERE event_type NOT IN ('REVIEWER_REGISTERED', 'EXPIRED_RECORDS_SWEPT');
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN SELECT RAISE(ABORT, 'the audit ledger is append-only'); END;
DROP TABLE temp.enqueued;
CREATE INDEX audit_events_by_tenant ON audit_events (tenant, sequence);

{ddl.idempotency("idempotency_v2", "INTEGER", "BLOB")}
INSERT INTO idempotency_v2
    SELECT '', '', request_id, method, request_digest, response, tenant, case_id, create_time
    FROM idempotency;
DROP TABLE idempotency;
ALTER TABLE idempotency_v2 RENAME TO idempotency;
{ddl.IDEMPOTENCY_INDEXES}
"""

# What a freeze looks up in the ledger (``WriteTx.recorded``): the events of the round's
# reviews, its resolution and its reviewers, by record id, so the check costs a few index
# probes however long the ledger grows. Partial, so other events pay nothing to write.
_V3 = ddl.audit_lookups(ddl.AUDIT_LOOKUPS_V3, _payload)

# V4, every record checked against the ledger on read: a gold label's GOLD_LABEL_FROZEN event
# and a case's CASE_ENQUEUED event by case id (the other kinds are indexed by V3).
_V4 = ddl.audit_lookups(ddl.AUDIT_LOOKUPS_V4, _payload)

# V5, RFC 8785: each case and gold label names the canonical form of its digest. Rows written
# before are the legacy form (v1); new rows are written as v2 (JCS). See domain/digests.py.
_V5 = ddl.DIGEST_VERSIONS

# V6: approvals (ApprovalService), insert-only, and their ledger lookups.
_V6 = f"""{ddl.APPROVALS}
CREATE TRIGGER approvals_no_update BEFORE UPDATE ON approvals
BEGIN SELECT RAISE(ABORT, 'approvals are insert-only'); END;
CREATE TRIGGER approvals_no_delete BEFORE DELETE ON approvals
BEGIN SELECT RAISE(ABORT, 'approvals are insert-only'); END;
CREATE TRIGGER approval_steps_no_update BEFORE UPDATE ON approval_steps
BEGIN SELECT RAISE(ABORT, 'approval steps are insert-only'); END;
CREATE TRIGGER approval_steps_no_delete BEFORE DELETE ON approval_steps
BEGIN SELECT RAISE(ABORT, 'approval steps are insert-only'); END;
{ddl.audit_lookups(ddl.AUDIT_LOOKUPS_V6, _payload)}"""

# V7: reviews per round, rationales, and review revisions (``ddl.reviews_v7``): the reviews
# table is rebuilt without its UNIQUE (case, round, reviewer), keeping each row's rowid (the
# order reviews were stored in).
_V7 = f"""{ddl.CASES_RESOLUTIONS_V7}
{ddl.reviews_v7("reviews_v7", "INTEGER")}
INSERT INTO reviews_v7 (rowid, review_id, case_id, reviewer_id, round, outcome, label_key,
                        reason, submit_time, salt)
    SELECT rowid, review_id, case_id, reviewer_id, round, outcome, label_key, reason,
           submit_time, salt
    FROM reviews ORDER BY rowid;
DROP TABLE reviews;
ALTER TABLE reviews_v7 RENAME TO reviews;
{ddl.REVIEW_INDEXES_V7}
{ddl.review_views("r.rowid AS position")}"""

# V8: case assignment changes (``assignment_rows``), never updated, deleted only after
# their case (tenant deletion, expiry sweep), and their ledger lookups.
_V8 = f"""{ddl.ASSIGNMENTS}
CREATE TRIGGER case_assignments_no_update BEFORE UPDATE ON case_assignments
BEGIN SELECT RAISE(ABORT, 'case assignments are insert-only'); END;
CREATE TRIGGER case_assignments_no_delete BEFORE DELETE ON case_assignments
WHEN EXISTS (SELECT 1 FROM cases WHERE case_id = OLD.case_id)
BEGIN SELECT RAISE(ABORT, 'case assignments are deleted only with their case'); END;
{ddl.audit_lookups(ddl.AUDIT_LOOKUPS_V8, _payload)}"""

# V9: each case's claims and spot-check rate (calibration).
_V9 = ddl.case_claims_v9("REAL")

MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9)
SCHEMA_VERSION = len(MIGRATIONS)

PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    # FULL: a commit is on disk (WAL fsynced) before the caller is acknowledged.
    "PRAGMA synchronous = FULL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA busy_timeout = 10000",
)

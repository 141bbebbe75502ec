"""The adjudication schema on PostgreSQL, versioned like the SQLite one (``storage.sqlite.schema``).

Version N here holds what SQLite's version N holds, so one number names the
same schema on both engines. What SQLite spells as triggers raising ABORT is a
PL/pgSQL trigger function here; timestamps stored as microseconds are BIGINT;
the audit payload is ``jsonb`` (the chain hash covers its canonical JSON, which
is recomputed from the decoded payload, so jsonb's normal form loses nothing);
reviews get an identity column that stands in for SQLite's ``rowid`` (the
order reviews were written in). V2's back-fill of pre-V2 rows is left out:
there were never pre-V2 PostgreSQL databases.

The applied version lives in ``schema_version`` (one row). Migrating runs under
a session advisory lock, so replicas starting together apply each version once;
a database newer than the code is refused.
"""

from __future__ import annotations

from assay.services.adjudication.storage import ddl
from assay.services.adjudication.storage.postgres import queries


def _payload(key: str) -> str:
    """The audit payload's text at ``key`` (an index expression)."""
    return f"(payload ->> '{key}')"


# The key of the advisory lock held while migrating (any constant unique to Assay).
MIGRATION_LOCK = 0x4153534159000001  # "ASSAY" + 1

_V1 = f"""
CREATE FUNCTION assay_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation';
END $$;

{ddl.reviewers("BIGINT")}
CREATE TRIGGER reviewers_no_delete BEFORE DELETE ON reviewers
    FOR EACH ROW EXECUTE FUNCTION assay_refuse('reviewers are never deleted');

{ddl.cases("BIGINT")}

{ddl.reviews("BIGINT", "position    BIGINT GENERATED ALWAYS AS IDENTITY")}
CREATE INDEX reviews_by_case ON reviews (case_id, round, position);

{ddl.resolutions("BIGINT")}

{ddl.GOLD_LABELS}
CREATE TRIGGER gold_labels_insert_only BEFORE UPDATE OR DELETE ON gold_labels
    FOR EACH ROW EXECUTE FUNCTION assay_refuse('gold labels are insert-only');
CREATE TRIGGER gold_labels_no_truncate BEFORE TRUNCATE ON gold_labels
    FOR EACH STATEMENT EXECUTE FUNCTION assay_refuse('gold labels are insert-only');

CREATE TABLE audit_events (
    sequence      BIGINT PRIMARY KEY CHECK (sequence >= 1),
    event_type    TEXT NOT NULL,
    occur_time    TEXT NOT NULL,
    payload       JSONB NOT NULL,
    previous_hash TEXT NOT NULL,
    hash          TEXT NOT NULL
);
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION assay_refuse('the audit ledger is append-only');
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION assay_refuse('the audit ledger is append-only');

{ddl.idempotency_v1("BIGINT", "BYTEA")}
{ddl.IDEMPOTENCY_INDEXES}
"""

_V2 = f"""
ALTER TABLE reviewers ADD COLUMN identity_issuer TEXT NOT NULL DEFAULT '';
ALTER TABLE reviewers ADD COLUMN identity_subject TEXT NOT NULL DEFAULT '';
CREATE TRIGGER reviewers_no_update BEFORE UPDATE ON reviewers
    FOR EACH ROW EXECUTE FUNCTION assay_refuse('reviewers are never changed');
CREATE TRIGGER reviewers_no_truncate BEFORE TRUNCATE ON reviewers
    FOR EACH STATEMENT EXECUTE FUNCTION assay_refuse('reviewers are never deleted');

ALTER TABLE reviews ADD COLUMN salt TEXT NOT NULL DEFAULT '';

ALTER TABLE audit_events ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_events ADD COLUMN actor_issuer TEXT;
ALTER TABLE audit_events ADD COLUMN actor_subject TEXT;
CREATE INDEX audit_events_by_tenant ON audit_events (tenant, sequence);

DROP TABLE idempotency;
{ddl.idempotency("idempotency", "BIGINT", "BYTEA")}
{ddl.IDEMPOTENCY_INDEXES}
"""

_V3 = ddl.audit_lookups(ddl.AUDIT_LOOKUPS_V3, _payload)

_V4 = ddl.audit_lookups(ddl.AUDIT_LOOKUPS_V4, _payload)

# V5: which canonical form each stored digest was computed with (rows before it: v1).
_V5 = ddl.DIGEST_VERSIONS

# V6: approvals (ApprovalService), insert-only, and their ledger lookups.
_V6 = f"""{ddl.APPROVALS}
CREATE TRIGGER approvals_insert_only BEFORE UPDATE OR DELETE ON approvals
    FOR EACH ROW EXECUTE FUNCTION assay_refuse('approvals are insert-only');
CREATE TRIGGER approvals_no_truncate BEFORE TRUNCATE ON approvals
    FOR EACH STATEMENT EXECUTE FUNCTION assay_refuse('approvals are insert-only');
CREATE TRIGGER approval_steps_insert_only BEFORE UPDATE OR DELETE ON approval_steps
    FOR EACH ROW EXECUTE FUNCTION assay_refuse('approval steps are insert-only');
CREATE TRIGGER approval_steps_no_truncate BEFORE TRUNCATE ON approval_steps
    FOR EACH STATEMENT EXECUTE FUNCTION assay_refuse('approval steps are insert-only');
{ddl.audit_lookups(ddl.AUDIT_LOOKUPS_V6, _payload)}"""

# V7: reviews per round, rationales, and review revisions (as SQLite's V7, which rebuilds its
# reviews table; here the constraints change in place).
_V7 = f"""{ddl.CASES_RESOLUTIONS_V7}
ALTER TABLE reviews DROP CONSTRAINT reviews_case_id_round_reviewer_id_key;
ALTER TABLE reviews DROP CONSTRAINT reviews_outcome_check;
ALTER TABLE reviews ADD CONSTRAINT reviews_outcome_check
    CHECK (outcome IN ('LABEL', 'UNRESOLVED', 'NOT_EVALUABLE', 'WITHDRAWN'));
ALTER TABLE reviews ADD COLUMN rationale TEXT NOT NULL DEFAULT '';
ALTER TABLE reviews ADD COLUMN supersedes TEXT;
{ddl.REVIEW_INDEXES_V7}
{ddl.review_views("r.position")}"""

# V8: case assignment changes, never updated, deleted only after their case (as SQLite's).
_V8 = f"""{ddl.ASSIGNMENTS}
CREATE FUNCTION assay_assignment_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' OR EXISTS (SELECT 1 FROM cases WHERE case_id = OLD.case_id) THEN
        RAISE EXCEPTION 'case assignments are insert-only, deleted only with their case'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER case_assignments_insert_only BEFORE UPDATE OR DELETE ON case_assignments
    FOR EACH ROW EXECUTE FUNCTION assay_assignment_guard();
CREATE TRIGGER case_assignments_no_truncate BEFORE TRUNCATE ON case_assignments
    FOR EACH STATEMENT EXECUTE FUNCTION assay_refuse('case assignments are insert-only');
{ddl.audit_lookups(ddl.AUDIT_LOOKUPS_V8, _payload)}"""

# V9: each case's claims and spot-check rate (calibration).
_V9 = ddl.case_claims_v9("DOUBLE PRECISION")

MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9)
SCHEMA_VERSION = len(MIGRATIONS)

_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row),
    version  INTEGER NOT NULL
);
INSERT INTO schema_version (version) VALUES (0) ON CONFLICT DO NOTHING;
"""


class SchemaTooNew(RuntimeError):
    """The database was written by a newer Assay; running on it could corrupt it."""


async def version(db: queries.Db) -> int:
    """The applied schema version (0 for an empty database)."""
    exists = await db.fetchval("SELECT to_regclass('schema_version') IS NOT NULL")
    if not exists:
        return 0
    found = await db.fetchval("SELECT version FROM schema_version")
    return int(found or 0)


async def migrate(db: queries.Db, where: str = "the database") -> int:
    """Apply every pending version, each in its own transaction; return the version now.

    Raises ``SchemaTooNew`` for a database newer than ``SCHEMA_VERSION``."""
    await db.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
    try:
        await db.execute(_VERSION_TABLE)
        current = await version(db)
        if current > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{where} has schema version {current}; this assay knows up to {SCHEMA_VERSION}"
            )
        for target in range(current + 1, SCHEMA_VERSION + 1):
            async with db.transaction():
                await db.execute(MIGRATIONS[target - 1])
                await db.execute("UPDATE schema_version SET version = $1", target)
        return SCHEMA_VERSION
    finally:
        await db.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)

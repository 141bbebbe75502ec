"""Builds the adjudication ``ServiceSpec`` on the engine ``--db`` names, and closes it on
shutdown (or at once, when building the rest fails: an open store holds connections, a
writer task and, on SQLite, the file's process lock).

``--db`` is a SQLite file (the embedded default) or a PostgreSQL URL or libpq connection
string (replicas); ``assay.runtime.database_url`` says which, or refuses it.
The ledger signing key defaults to ``<db>.ledger-key.pem`` beside a SQLite file; a
PostgreSQL database has no file to put it beside, and every replica must sign the same
log with the same key, so there ``--ledger-signing-key`` is required (a key made up per
replica would give each its own checkpoints). The password is never shown: start lines and
errors name the database through ``database_url.masked``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg

from assay.runtime.config import ConfigurationError
from assay.runtime.database_url import masked, parse_database_url
from assay.runtime.logging import get_logger
from assay.runtime.server import ServiceSpec
from assay.services.adjudication.adapters.approval_servicer import ApprovalServicer
from assay.services.adjudication.adapters.servicer import AdjudicationServicer
from assay.services.adjudication.domain.approval_policy import (
    ApprovalPolicy,
    parse_approval_policy,
)
from assay.services.adjudication.domain.permissions import RegistrationPolicy
from assay.services.adjudication.domain.review_policy import ReviewPolicy, parse_review_policy
from assay.services.adjudication.storage.interface import Store
from assay.services.adjudication.storage.postgres import PostgresStore
from assay.services.adjudication.storage.postgres import SchemaTooNew as PostgresSchemaTooNew
from assay.services.adjudication.storage.sqlite.single_process import DatabaseInUse
from assay.services.adjudication.storage.sqlite.store import SchemaTooNew
from assay.services.adjudication.storage.sqlite.store import Store as SqliteStore
from assay.services.adjudication.use_cases.approvals import Approvals
from assay.services.adjudication.use_cases.expiry import ExpiryWatch
from assay.services.adjudication.use_cases.lookups import Lookups
from assay.services.adjudication.use_cases.notifier import Notifier
from assay.services.adjudication.use_cases.operations import Adjudication
from assay.services.adjudication.use_cases.transparency import TransparencyLog, default_key_path
from assay.services.registry import ServeOptions
from assay.tlog.checkpoint import read_private_key
from assay.v1 import adjudication_service_pb2, approval_service_pb2

_log = get_logger("assay.adjudication")
_APPROVALS = approval_service_pb2.DESCRIPTOR.services_by_name["ApprovalService"]


async def open_store(target: str) -> Store:
    """The store ``target`` (``--db``) names, opened and migrated. ConfigurationError when it
    names no database (``database_url``); ValueError (one line, no password) when it cannot be
    opened: `assay serve` reports either as "cannot start adjudication: ..."."""
    database = parse_database_url(target)
    if database.is_postgres:
        try:
            store: Store = await PostgresStore.open(database.location)
        except (PostgresSchemaTooNew, asyncpg.PostgresError, OSError) as error:
            raise ValueError(f"{database.shown}: {masked(str(error))}") from None
    else:
        store = await _open_sqlite(Path(database.location))
    _log.info("database", service="adjudication", database=database.describe())
    return store


async def _open_sqlite(path: Path) -> Store:
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return await SqliteStore.open(path)
    except DatabaseInUse as error:
        raise ValueError(str(error)) from None
    except (SchemaTooNew, sqlite3.DatabaseError) as error:
        raise ValueError(f"{path}: {error}") from None


def signing_key_path(options: ServeOptions) -> Path:
    """``--ledger-signing-key``, else (SQLite only) ``<db>.ledger-key.pem``."""
    if options.ledger_signing_key is not None:
        return options.ledger_signing_key
    database = parse_database_url(options.db_path)
    if database.is_postgres:
        raise ConfigurationError(
            "a PostgreSQL --db needs --ledger-signing-key (ASSAY_LEDGER_SIGNING_KEY): "
            "every replica must sign the transparency log with the same key"
        )
    return default_key_path(database.location)


async def build_spec(options: ServeOptions) -> ServiceSpec:
    """Open (and migrate) ``options.db_path``; the spec's ``close`` drains writes and closes it.
    ``allow_fixture_reviewers`` and ``reviewer_issuer`` decide how authenticated callers
    register reviewers (they change nothing without authentication). The ledger signing key
    (``signing_key_path``, created on first start) signs the transparency log's checkpoints."""
    policy = approval_policy(options)  # a bad [approvals] table opens nothing
    review = review_policy(options)
    key_path = signing_key_path(options)
    if key_path.exists():
        # A key file others may read is refused before the database is opened or created.
        try:
            read_private_key(key_path)
        except (OSError, ValueError) as error:
            raise ValueError(f"ledger signing key {key_path}: {error}") from None
    store = await open_store(options.db_path)
    try:
        try:
            log = TransparencyLog.open(key_path, store.chain_hashes)
            await log.sync()  # the tree over the stored ledger, built before serving
        except (OSError, ValueError) as error:
            raise ValueError(f"ledger signing key {key_path}: {error}") from None
        return _spec(store, log, options, policy, review)
    except BaseException:
        await store.close()
        raise


def approval_policy(options: ServeOptions) -> ApprovalPolicy:
    """The auth policy's ``[approvals]`` table; ConfigurationError naming the key at fault."""
    try:
        return parse_approval_policy(options.approvals)
    except ValueError as error:
        raise ConfigurationError(f"auth policy: {error}") from None


def review_policy(options: ServeOptions) -> ReviewPolicy:
    """The auth policy's ``[review]`` table; ConfigurationError naming the key at fault."""
    try:
        return parse_review_policy(options.review)
    except ValueError as error:
        raise ConfigurationError(f"auth policy: {error}") from None


def _spec(
    store: Store,
    log: TransparencyLog,
    options: ServeOptions,
    policy: ApprovalPolicy,
    review: ReviewPolicy,
) -> ServiceSpec:
    notifier = Notifier(policy.webhook_url, policy.webhook_attempts) if policy.webhook_url else None
    approvals = Approvals(store, policy, notifier=notifier)
    expiry = ExpiryWatch(approvals)
    store.listen_approvals(approvals.hub.changed)

    async def close() -> None:
        await expiry.close()
        if notifier is not None:
            await notifier.close()
        await store.close()

    return ServiceSpec(
        name="adjudication",
        descriptor=adjudication_service_pb2.DESCRIPTOR.services_by_name["AdjudicationService"],
        servicer=AdjudicationServicer(
            Adjudication(
                store,
                registration=RegistrationPolicy(
                    allow_fixture_reviewers=options.allow_fixture_reviewers,
                    reviewer_issuer=options.reviewer_issuer,
                    reviewer_subjects=options.reviewer_subjects,
                ),
                review=review,
            ),
            Lookups(store, max_message_bytes=options.max_message_bytes, review=review),
            log,
        ),
        port=options.port,
        close=close,
        instrument=lambda metrics: metrics.watch_writer(store.writer),
        also=((_APPROVALS, ApprovalServicer(approvals)),),
    )

"""Builds the adjudication ``ServiceSpec``: opens the SQLite file, and closes it on shutdown
(or at once, when building the rest fails: an open store's writer thread keeps a process alive).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from assay.runtime.server import ServiceSpec
from assay.services.adjudication.lookups import Lookups
from assay.services.adjudication.operations import Adjudication
from assay.services.adjudication.permissions import RegistrationPolicy
from assay.services.adjudication.servicer import AdjudicationServicer
from assay.services.adjudication.storage import SchemaTooNew, Store
from assay.services.adjudication.transparency import TransparencyLog, default_key_path
from assay.services.registry import ServeOptions
from assay.v1 import adjudication_service_pb2


async def build_spec(options: ServeOptions) -> ServiceSpec:
    """Open (and migrate) ``options.db_path``; the spec's ``close`` drains writes and closes it.
    ``allow_fixture_reviewers`` and ``reviewer_issuer`` decide how authenticated callers
    register reviewers (they change nothing without authentication). The ledger signing key
    (``options.ledger_signing_key``, else ``<db>.ledger-key.pem``, created on first start)
    signs the transparency log's checkpoints."""
    path = Path(options.db_path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        store = await Store.open(path)
    except (SchemaTooNew, sqlite3.DatabaseError) as error:
        # ValueError: `assay serve` reports it as one line ("cannot start adjudication: ...").
        raise ValueError(f"{path}: {error}") from None
    try:
        key_path = options.ledger_signing_key or default_key_path(path)
        try:
            log = TransparencyLog.open(key_path, store.chain_hashes)
            await log.sync()  # the tree over the stored ledger, built before serving
        except (OSError, ValueError) as error:
            raise ValueError(f"ledger signing key {key_path}: {error}") from None
        return _spec(store, log, options)
    except BaseException:
        await store.close()  # its writer thread would keep the process alive
        raise


def _spec(store: Store, log: TransparencyLog, options: ServeOptions) -> ServiceSpec:
    return ServiceSpec(
        name="adjudication",
        descriptor=adjudication_service_pb2.DESCRIPTOR.services_by_name["AdjudicationService"],
        servicer=AdjudicationServicer(
            Adjudication(
                store,
                registration=RegistrationPolicy(
                    allow_fixture_reviewers=options.allow_fixture_reviewers,
                    reviewer_issuer=options.reviewer_issuer,
                ),
            ),
            Lookups(store),
            log,
        ),
        port=options.port,
        close=store.close,
        instrument=lambda metrics: metrics.watch_writer(store.writer),
    )

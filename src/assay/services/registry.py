"""Which services exist, their default ports, and how to build each one's ``ServiceSpec``.

``assay serve NAME`` and ``assay up`` read this table, so a new service is
one entry here. Builders import their service lazily: starting the resolver
never imports the adjudication storage.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.runtime.config import DEFAULT_MAX_MESSAGE_BYTES
from assay.runtime.database_move import MoveRefused, MoveReport, MoveUnverified
from assay.runtime.database_url import masked, parse_database_url
from assay.runtime.server import ServiceSpec
from assay.runtime.tls import ClientTls
from assay.services.resolver.domain import request_cost

# What one ResolveColumns stream may hold unless ``assay serve`` is told otherwise (its
# flags' defaults): the command reaches the services only through this module.
MAX_COLUMNS_ROWS = request_cost.MAX_COLUMNS_ROWS
MAX_COLUMNS_BYTES = request_cost.MAX_COLUMNS_BYTES
MAX_COLUMNS_RATIO = request_cost.MAX_COLUMNS_RATIO


@dataclass(frozen=True)
class ServeOptions:
    """Everything a service may need to start; each takes what it uses."""

    port: int
    resolver_target: str = "127.0.0.1:50051"
    db_path: str = "assay.db"
    reliability_table: str | None = None
    # The same limit the servers apply, for channels a service opens to another one.
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    # Adjudication, when the server authenticates callers: whether MECHANISM_TEST_FIXTURE
    # reviewers may be registered, and the issuer a HUMAN reviewer's id is bound under.
    allow_fixture_reviewers: bool = False
    reviewer_issuer: str = ""
    # Reviewer id -> the subject the auth policy binds it to (its ``reviewer_id`` entries).
    reviewer_subjects: Mapping[str, str] = field(default_factory=dict)
    # The planner's channel to the resolver: TLS (None: plaintext) and its own token file.
    resolver_tls: ClientTls | None = None
    resolver_token_file: Path | None = None
    # Adjudication: the Ed25519 key signing the audit log's checkpoints (None: the
    # database's ``<db>.ledger-key.pem``, created on first start).
    ledger_signing_key: Path | None = None
    # The planner: operator probe definitions replacing built-in ones (``--probes``).
    probes_file: Path | None = None
    # The planner: the executor's observations file (``--observations``), read for each
    # probe kind's observed latency and success rate, and re-read when it changes.
    observations_file: Path | None = None
    # The resolver: what one ResolveColumns stream may hold (``--columns-max-*``; None:
    # the resolver's default, ``resolver.domain.request_cost``).
    columns_max_rows: int | None = None
    columns_max_bytes: int | None = None
    columns_max_ratio: int | None = None
    # Adjudication's approvals: the auth policy's ``[approvals]`` table (quorums, lifetimes,
    # the webhook), as written.
    approvals: Mapping[str, Any] = field(default_factory=dict)
    # Adjudication's review work: the auth policy's ``[review]`` table, as written.
    review: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ServiceEntry:
    """A service the ``assay`` command can start."""

    name: str
    default_port: int
    # The module exposes ``async def build_spec(options: ServeOptions) -> ServiceSpec``.
    module: str

    def builder(self) -> Callable[[ServeOptions], Awaitable[ServiceSpec]]:
        module = importlib.import_module(self.module)
        build: Callable[[ServeOptions], Awaitable[ServiceSpec]] = module.build_spec
        return build


SERVICES: dict[str, ServiceEntry] = {
    entry.name: entry
    for entry in (
        ServiceEntry("resolver", 50051, "assay.services.resolver.service"),
        ServiceEntry("planner", 50052, "assay.services.planner.service"),
        ServiceEntry("adjudication", 50053, "assay.services.adjudication.service"),
    )
}


async def move_sqlite_to_postgres(source: str, target: str) -> MoveReport:
    """``assay db migrate``: adjudication's corpus copied from the SQLite file ``source``
    names to the empty PostgreSQL database ``target`` names (both as ``--db`` takes them;
    ConfigurationError otherwise). Imported only when asked, like the services; every
    message it raises has its passwords masked."""
    source_db, target_db = parse_database_url(source), parse_database_url(target)
    if source_db.is_postgres:
        raise MoveRefused(f"--from {source_db.shown}: the source must be a SQLite file")
    if not target_db.is_postgres:
        raise MoveRefused(f"--to {target_db.shown}: the target must be a PostgreSQL database")
    module = importlib.import_module("assay.services.adjudication.use_cases.move_to_postgres")
    try:
        report: MoveReport = await module.move(
            Path(source_db.location), target_db.location, target_db.shown
        )
    except MoveRefused as error:
        raise MoveRefused(masked(str(error))) from None
    except MoveUnverified as error:
        raise MoveUnverified(masked(str(error))) from None
    return report

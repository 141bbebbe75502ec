"""The three services in this process, on free loopback ports, for the demo and tests.

The planner needs the resolver's real address at build time, and with port 0
that address exists only once the resolver listens; so the resolver starts
first, then the planner (pointed at it) and adjudication (on its own database
file). Everything stops, and the database closes, when the block exits.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from assay.runtime.config import ServerConfig
from assay.runtime.security import Security
from assay.runtime.server import serving
from assay.services.registry import SERVICES, ServeOptions

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class LocalStack:
    """Where each service of a local stack listens."""

    resolver: str
    planner: str
    adjudication: str
    db_path: str


@contextlib.asynccontextmanager
async def local_stack(
    db_path: str | Path,
    reliability_table: str | None = None,
    security: Security | None = None,
    allow_fixture_reviewers: bool = True,
    ledger_signing_key: Path | None = None,
    observations_file: Path | None = None,
) -> AsyncIterator[LocalStack]:
    """Serve resolver, planner and adjudication on ``127.0.0.1:0`` for the block's duration.
    ``db_path`` may be a ``postgresql://`` URL (then ``ledger_signing_key`` is required).

    ``security`` (e.g. ``Security.from_credentials(DIR)``) turns on TLS and authentication,
    the planner then calling the resolver over TLS with its own token; ``observations_file``
    is the planner's ``--observations``."""
    security = security or Security()
    config = ServerConfig(host=LOOPBACK, grace_seconds=1.0, tls=security.tls, gate=security.gate)
    async with contextlib.AsyncExitStack() as stack:
        resolver_spec = await SERVICES["resolver"].builder()(
            ServeOptions(port=0, reliability_table=reliability_table, db_path=str(db_path))
        )
        (resolver,) = await stack.enter_async_context(serving([resolver_spec], config))
        resolver_target = f"{LOOPBACK}:{resolver.port}"
        options = ServeOptions(
            port=0,
            resolver_target=resolver_target,
            db_path=str(db_path),
            allow_fixture_reviewers=allow_fixture_reviewers,
            reviewer_issuer=security.gate.reviewer_issuer,
            reviewer_subjects=security.gate.reviewer_subjects,
            resolver_tls=security.peer_tls,
            resolver_token_file=security.peer_token,
            ledger_signing_key=ledger_signing_key,
            approvals=security.gate.policy.approvals if security.gate.policy else {},
            observations_file=observations_file,
        )
        planner_spec = await SERVICES["planner"].builder()(options)
        adjudication_spec = await SERVICES["adjudication"].builder()(options)
        planner, adjudication = await stack.enter_async_context(
            serving([planner_spec, adjudication_spec], config)
        )
        yield LocalStack(
            resolver=resolver_target,
            planner=f"{LOOPBACK}:{planner.port}",
            adjudication=f"{LOOPBACK}:{adjudication.port}",
            db_path=str(db_path),
        )

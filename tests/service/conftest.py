"""Fixtures the service tests share."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from assay.runtime.logging import configure_logging
from tests.service.tamper_sql import Copies, run_sync
from tests.support.postgres import PostgresServer


@pytest.fixture
def log_stream() -> io.StringIO:
    """The runtime's log lines, captured for the test to read."""
    stream = io.StringIO()
    configure_logging("info", stream)
    return stream


@pytest.fixture(params=["sqlite", "postgresql"])
def adjudication_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where an adjudication test keeps its data, once per engine: a SQLite file, and a
    fresh database on the session's real PostgreSQL server (``tests/support/postgres``)."""
    if request.param == "sqlite":
        return str(tmp_path / "a.db")
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_db(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """An empty database of each engine kept for a whole module: populated once, then
    copied for each test (``copies``) so every test edits a private database."""
    if request.param == "sqlite":
        yield str(tmp_path_factory.mktemp("pristine") / "a.db")
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name = asyncio.run(server.create_database())
    try:
        yield server.dsn(name)
    finally:
        asyncio.run(server.drop_database(name))


@pytest.fixture
def copies() -> Iterator[Copies]:
    """Private copies of a populated database (``tamper_sql.Copies``), dropped after the test."""
    made = Copies()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def new_db(
    request: pytest.FixtureRequest, adjudication_db: str, tmp_path: Path
) -> Iterator[Callable[[str], str]]:
    """More empty databases on ``adjudication_db``'s engine, for a test that needs several:
    ``new_db(name)`` is a SQLite file ``<name>.db`` or a fresh PostgreSQL database (dropped
    after the test)."""
    if not adjudication_db.startswith("postgresql://"):
        yield lambda name: str(tmp_path / f"{name}.db")
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    made: list[str] = []

    def make(name: str) -> str:
        made.append(run_sync(server.create_database()))
        return server.dsn(made[-1])

    try:
        yield make
    finally:
        for database in made:
            asyncio.run(server.drop_database(database))

"""Fixtures the service tests share."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from assay.runtime.logging import configure_logging


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

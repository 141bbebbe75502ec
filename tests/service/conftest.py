"""Fixtures the service tests share."""

from __future__ import annotations

import io

import pytest

from assay.runtime.logging import configure_logging


@pytest.fixture
def log_stream() -> io.StringIO:
    """The runtime's log lines, captured for the test to read."""
    stream = io.StringIO()
    configure_logging("info", stream)
    return stream

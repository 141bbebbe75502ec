"""Fixtures every tier may use: the real PostgreSQL server (``tests/support/postgres.py``)."""

import os

pytest_plugins = ["tests.support.postgres"]

# `assay up` serves the console too: on a free port in tests (the start line names it), as
# the services' ports are, never on the shared default 8080.
os.environ.setdefault("ASSAY_CONSOLE_PORT", "0")

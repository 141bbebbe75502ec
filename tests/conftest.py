"""Fixtures every tier may use: the real PostgreSQL server (``tests/support/postgres.py``)."""

pytest_plugins = ["tests.support.postgres"]

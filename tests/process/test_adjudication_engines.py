"""`assay serve adjudication` on either engine, as real processes: a second process on one
SQLite file is refused at start in one line; a PostgreSQL ``--db`` serves, needs a shared
ledger signing key, and never shows the URL's password."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from tests.support.processes import assay_command, free_port, service_process

EXIT_WITHIN_SECONDS = 30.0


def run_assay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay_command(*args),
        capture_output=True,
        text=True,
        timeout=EXIT_WITHIN_SECONDS,
        env={**os.environ, "ASSAY_DB": ""},
        check=False,
    )


def errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr's lines but the dev-mode warning every unauthenticated start prints."""
    return [x for x in done.stderr.strip().splitlines() if not x.startswith("assay: WARNING")]


def serve_args(port: int, db: str, *more: str) -> list[str]:
    return ["serve", "adjudication", "--port", str(port), "--db", db, *more]


class TestOneProcessPerSqliteFile:
    def test_a_second_process_is_refused_at_start_in_one_line(self, tmp_path: Path) -> None:
        """While one server holds the file, a second exits 1 naming the file and the lock;
        the lock file is owner-only; once the first stops, the file opens again."""
        db = str(tmp_path / "a.db")
        port = free_port()
        with service_process(serve_args(port, db), tmp_path / "first.log", port):
            done = run_assay(*serve_args(free_port(), db))
            assert done.returncode == 1, done.stderr
            assert errors(done) == [
                f"assay: cannot start adjudication: {db} is in use by another process "
                f"(lock {db}.lock); one process serves a SQLite file, use PostgreSQL for replicas"
            ]
            assert stat.S_IMODE(os.stat(db + ".lock").st_mode) == 0o600
        again = free_port()
        with service_process(serve_args(again, db), tmp_path / "second.log", again):
            pass


class TestPostgresDb:
    def test_serves_with_a_key_and_refuses_without_one(
        self, tmp_path: Path, postgres_dsn: str
    ) -> None:
        """With --ledger-signing-key the server starts on the database; without one it exits
        2 (a configuration error) saying the key is needed; neither shows the password."""
        password = postgres_dsn.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
        port = free_port()
        key = tmp_path / "ledger-key.pem"
        log = tmp_path / "pg.log"
        with service_process(
            serve_args(port, postgres_dsn, "--ledger-signing-key", str(key)), log, port
        ):
            assert key.exists()
        assert password not in log.read_text()
        done = run_assay(*serve_args(free_port(), postgres_dsn))
        assert done.returncode == 2
        assert "needs --ledger-signing-key" in done.stderr
        assert password not in done.stderr

    def test_a_wrong_password_is_one_line_without_it(
        self, tmp_path: Path, postgres_dsn: str
    ) -> None:
        """A refused login names the database with the password redacted."""
        scheme, rest = postgres_dsn.split("://", 1)
        user_password, where = rest.split("@", 1)
        user = user_password.split(":", 1)[0]
        wrong = f"{scheme}://{user}:not-the-password-xyz@{where}"
        done = run_assay(
            *serve_args(free_port(), wrong, "--ledger-signing-key", str(tmp_path / "k.pem"))
        )
        assert done.returncode == 1
        lines = errors(done)
        assert len(lines) == 1, done.stderr
        assert f"{user}:***@{where}" in lines[0]
        assert "not-the-password-xyz" not in done.stderr

"""`assay serve adjudication --db …` as a person types it: refused in one line, or started on the
database it names, said on the start line with the password masked.

A mistyped URL used to become a SQLite file whose name held the password; now anything
``--db`` cannot name exits 2 with one line and creates nothing. A PostgreSQL URL in any
case, or a libpq key=value string, starts on the real server; the start line names the
engine and where, with ``***`` for the password, which appears nowhere in the output.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.postgres import SUPERUSER, PostgresServer
from tests.support.processes import assay_command, free_port, service_process

pytestmark = [pytest.mark.process]

EXIT_WITHIN_SECONDS = 20.0
SECRET = "Sup3r-s3cret-pw"


def run_assay(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``assay ARGS`` run to its end in ``cwd`` (where a SQLite file would land)."""
    return subprocess.run(
        assay_command(*args),
        capture_output=True,
        text=True,
        timeout=EXIT_WITHIN_SECONDS,
        check=False,
        cwd=cwd,
    )


def start_line(log: Path) -> str:
    """The adjudication start line among a process's stderr lines."""
    lines = log.read_text(encoding="utf-8").splitlines()
    found = [line for line in lines if line.startswith("assay adjudication serving on")]
    assert len(found) == 1, lines
    return found[0]


class TestRefusedAtStart:
    @pytest.mark.parametrize(
        ("db", "why"),
        [
            (f"mysql://assay:{SECRET}@localhost/assay", "unsupported database mysql://"),
            (f"host=localhost dbname assay password={SECRET}", "missing '=' after 'dbname'"),
            (f"postgresql:assay?password={SECRET}", "looks like a URL scheme"),
            (f"host=localhost connect_timeout=3 password={SECRET}", "unsupported connection"),
        ],
    )
    def test_a_db_it_cannot_name_exits_2_with_one_masked_line(
        self, tmp_path: Path, db: str, why: str
    ) -> None:
        """Exit 2, one line naming the reason, no traceback, no password, and no file made."""
        done = run_assay(tmp_path, "serve", "adjudication", "--port", str(free_port()), "--db", db)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("assay: --db ")
        assert why in lines[0]
        assert "***" in lines[0]
        assert SECRET not in done.stderr + done.stdout
        assert "Traceback" not in done.stderr
        assert list(tmp_path.iterdir()) == []

    def test_a_start_error_masks_a_password_in_the_query_string(
        self, tmp_path: Path, postgres_server: PostgresServer, postgres_dsn: str
    ) -> None:
        """A wrong password given as ?password=: the refusal names the database with *** and
        the password shows nowhere."""
        database = postgres_dsn.rsplit("/", 1)[1]
        db = f"postgresql://{SUPERUSER}@127.0.0.1:{postgres_server.port}/{database}?password={SECRET}"
        key = tmp_path / "key.pem"
        done = run_assay(
            tmp_path,
            "serve",
            "adjudication",
            "--port",
            str(free_port()),
            "--db",
            db,
            "--ledger-signing-key",
            str(key),
        )
        assert done.returncode == 1, done.stderr
        line = done.stderr.strip().splitlines()[-1]
        assert line.startswith("assay: cannot start adjudication: postgresql://")
        assert "password=***" in line
        assert SECRET not in done.stderr + done.stdout
        assert "Traceback" not in done.stderr


class TestStartLine:
    def test_sqlite_start_line_names_the_file(self, tmp_path: Path) -> None:
        """A path: the start line says SQLite and the file's absolute path."""
        port = free_port()
        db = tmp_path / "data" / "assay.db"
        log = tmp_path / "serve.log"
        with service_process(
            ["serve", "adjudication", "--port", str(port), "--db", str(db)], log, port
        ):
            line = start_line(log)
        assert line == f"assay adjudication serving on 127.0.0.1:{port} (database: SQLite {db})"

    @pytest.mark.parametrize("form", ["uppercase-url", "libpq"])
    def test_postgres_start_line_names_the_database_with_the_password_masked(
        self, tmp_path: Path, postgres_server: PostgresServer, postgres_dsn: str, form: str
    ) -> None:
        """POSTGRESQL://… and a libpq string both start on the real server (no file is made);
        the start line says PostgreSQL and where, with *** for the password, which appears
        nowhere in the process's output."""
        database = postgres_dsn.rsplit("/", 1)[1]
        password = postgres_server.password
        if form == "libpq":
            db = (
                f"host=127.0.0.1 port={postgres_server.port} dbname={database} "
                f"user={SUPERUSER} password='{password}'"
            )
            shown = (
                f"host=127.0.0.1 port={postgres_server.port} dbname={database} "
                f"user={SUPERUSER} password=***"
            )
        else:
            rest = f"{SUPERUSER}:{password}@127.0.0.1:{postgres_server.port}/{database}"
            db = f"POSTGRESQL://{rest}"
            shown = f"POSTGRESQL://{SUPERUSER}:***@127.0.0.1:{postgres_server.port}/{database}"
        port = free_port()
        log = tmp_path / "serve.log"
        args = ["serve", "adjudication", "--port", str(port), "--db", db]
        args += ["--ledger-signing-key", str(tmp_path / "key.pem")]
        with service_process(args, log, port):
            line = start_line(log)
        assert (
            line == f"assay adjudication serving on 127.0.0.1:{port} (database: PostgreSQL {shown})"
        )
        assert password not in log.read_text(encoding="utf-8")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["key.pem", "serve.log"]

"""``--db`` names a SQLite file or a PostgreSQL database, or is refused; passwords never show."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest

from assay.runtime.config import ConfigurationError
from assay.runtime.database_url import libpq_params, masked, parse_database_url

SECRET = "s3cr3t-Pw"


class TestEngineChosen:
    @pytest.mark.parametrize(
        ("given", "engine", "location"),
        [
            ("assay.db", "sqlite", "assay.db"),
            ("/var/lib/assay/a.db", "sqlite", "/var/lib/assay/a.db"),
            ("./a=b.db", "sqlite", "./a=b.db"),
            ("data dir/assay.db", "sqlite", "data dir/assay.db"),
            ("sqlite:///rel.db", "sqlite", "rel.db"),
            ("sqlite:////abs/x.db", "sqlite", "/abs/x.db"),
            ("SQLite:////abs/x.db", "sqlite", "/abs/x.db"),
            ("postgresql://u@h/db", "postgresql", "postgresql://u@h/db"),
            ("postgres://u@h:5433/db", "postgresql", "postgresql://u@h:5433/db"),
            ("POSTGRESQL://u:pw@h/db", "postgresql", "postgresql://u:pw@h/db"),
            ("PostgreS://h/db?sslmode=require", "postgresql", "postgresql://h/db?sslmode=require"),
            (
                "postgresql://u@h1:5432,h2:5433/db?target_session_attrs=read-write",
                "postgresql",
                "postgresql://u@h1:5432,h2:5433/db?target_session_attrs=read-write",
            ),
            ("postgresql://h1,[::1]:5433/db", "postgresql", "postgresql://h1,[::1]:5433/db"),
        ],
    )
    def test_each_accepted_form_names_its_engine(
        self, given: str, engine: str, location: str
    ) -> None:
        """Paths and sqlite:/// are SQLite; postgresql:// and postgres:// in any case are
        PostgreSQL, connected to through one normalized scheme."""
        found = parse_database_url(given)
        assert (found.engine, found.location) == (engine, location)

    @pytest.mark.parametrize(
        ("given", "params"),
        [
            ("host=localhost dbname=assay", {"host": "localhost", "dbname": "assay"}),
            (
                f"host=db port=5433 dbname=assay user=x password={SECRET}",
                {"host": "db", "port": "5433", "dbname": "assay", "user": "x", "password": SECRET},
            ),
            ("  host = db   dbname=a ", {"host": "db", "dbname": "a"}),
            ("host=/run/postgresql dbname=a", {"host": "/run/postgresql", "dbname": "a"}),
            (
                "host=db password='a b\\'c\\\\d' dbname=x",
                {"host": "db", "password": "a b'c\\d", "dbname": "x"},
            ),
            ("host=db password='' dbname=x", {"host": "db", "password": "", "dbname": "x"}),
            ("service=assay sslmode=verify-full", {"service": "assay", "sslmode": "verify-full"}),
            (
                "host=h1,h2 port=5432,5433 target_session_attrs=read-write",
                {"host": "h1,h2", "port": "5432,5433", "target_session_attrs": "read-write"},
            ),
        ],
    )
    def test_a_libpq_string_becomes_the_equivalent_url(
        self, given: str, params: dict[str, str]
    ) -> None:
        """A libpq key=value string is PostgreSQL; its values (quoted, escaped) reach the
        driver's URL intact, as query parameters."""
        found = parse_database_url(given)
        assert found.engine == "postgresql"
        parts = urllib.parse.urlsplit(found.location)
        assert parts.scheme == "postgresql"
        query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        assert query == params


class TestRefused:
    @pytest.mark.parametrize(
        ("given", "why"),
        [
            (f"mysql://u:{SECRET}@h/db", "unsupported database mysql://"),
            ("redis://h:6379/0", "unsupported database redis://"),
            ("postgresql:db", "looks like a URL scheme"),
            ("file:assay.db", "looks like a URL scheme"),
            ("foo bar=baz", "missing '=' after 'foo'"),
            ("host=localhost dbname", "missing '=' after 'dbname'"),
            (f"host=h password='{SECRET}", "unterminated quoted value"),
            ("host=h connect_timeout=3", "unsupported connection keyword 'connect_timeout'"),
            ("a=b.db", "unsupported connection keyword 'a'"),
            ("postgresql://u@h:port/db", "not a valid PostgreSQL URL"),
            ("postgresql://h/db?a", "not a valid PostgreSQL URL"),
            ("postgresql://u@h1:1,h2:x/db", "host 2 of 2 'h2:x'"),
            ("postgresql://u@h1:x,h2:1,h3:2/db", "host 1 of 3 'h1:x'"),
            ("postgresql://h1:1,h2:70000/db", "host 2 of 2 'h2:70000'"),
            ("postgresql://h1:1,/db", "host 2 of 2 '': no host name"),
            ("postgresql://h1:1,:5/db", "host 2 of 2 ':5': no host name"),
            ("postgresql://h1:1,h2:0/db", "host 2 of 2 'h2:0': port 0"),
            ("postgresql://h/db?target_session_attrs=rw", "target_session_attrs='rw' is none of"),
            ("host=h1,h2 target_session_attrs=master", "target_session_attrs='master' is none"),
            ("sqlite://host/x.db", "sqlite:///PATH"),
            ("sqlite:///x.db?mode=ro", "sqlite:///PATH"),
            ("sqlite:///", "names no file"),
            ("", "it is empty"),
            ("   ", "it is empty"),
        ],
    )
    def test_what_names_no_database_is_refused_in_one_line(self, given: str, why: str) -> None:
        """Another scheme, a scheme-looking prefix, a malformed libpq string or URL: one line
        saying why, and what --db takes."""
        with pytest.raises(ConfigurationError) as caught:
            parse_database_url(given)
        message = str(caught.value)
        assert why in message
        assert "--db takes" in message
        assert "\n" not in message
        assert SECRET not in message


class TestMasked:
    @pytest.mark.parametrize(
        ("given", "shown"),
        [
            (f"postgresql://u:{SECRET}@h/db", "postgresql://u:***@h/db"),
            (f"POSTGRES://u:{SECRET}@h:5432/db", "POSTGRES://u:***@h:5432/db"),
            (f"postgresql://u:p@ss/w{SECRET}@h/db", "postgresql://u:***@h/db"),
            (f"postgresql://h/db?password={SECRET}", "postgresql://h/db?password=***"),
            (
                f"postgresql://h/db?sslmode=require&PASSWORD={SECRET}&x=1",
                "postgresql://h/db?sslmode=require&PASSWORD=***&x=1",
            ),
            (f"postgresql://h/db?sslpassword={SECRET}", "postgresql://h/db?sslpassword=***"),
            (f"postgresql://u:{SECRET}@h1:1,h2:2/db", "postgresql://u:***@h1:1,h2:2/db"),
            (f"host=h password={SECRET} dbname=d", "host=h password=*** dbname=d"),
            (f"host=h password = '{SECRET} x' dbname=d", "host=h password = *** dbname=d"),
            (f"host=h sslpassword='{SECRET}", "host=h sslpassword=***"),
            (
                f"host=h password={SECRET} sslrootcert=http://x",
                "host=h password=*** sslrootcert=http://x",
            ),
            (f"postgresql:db?password={SECRET}", "postgresql:db?password=***"),
            ("postgresql://u@h/db", "postgresql://u@h/db"),
            ("/var/lib/assay/a.db", "/var/lib/assay/a.db"),
        ],
    )
    def test_every_password_is_masked(self, given: str, shown: str) -> None:
        """Userinfo, query and libpq passwords all become ***; nothing else changes."""
        assert masked(given) == shown

    @pytest.mark.parametrize(
        "given",
        [
            f"postgresql://u:{SECRET}@h/db",
            f"postgresql://h/db?password={SECRET}",
            f"host=h dbname=d password={SECRET}",
        ],
    )
    def test_the_description_names_the_engine_and_masks(self, given: str) -> None:
        """What a start line shows: the engine, where, and no password."""
        described = parse_database_url(given).describe()
        assert described.startswith("PostgreSQL ")
        assert "***" in described
        assert SECRET not in described

    def test_a_sqlite_description_names_the_absolute_file(self, tmp_path: Path) -> None:
        """SQLite: the file's absolute path."""
        described = parse_database_url(str(tmp_path / "a.db")).describe()
        assert described == f"SQLite {tmp_path / 'a.db'}"


class TestLibpqParser:
    @pytest.mark.parametrize(
        ("given", "pairs"),
        [
            ("", []),
            ("a=1", [("a", "1")]),
            ("a = 1 b= 2 c =3", [("a", "1"), ("b", "2"), ("c", "3")]),
            ("a='x y' b=''", [("a", "x y"), ("b", "")]),
            ("a='it\\'s' b='back\\\\slash'", [("a", "it's"), ("b", "back\\slash")]),
            ("a=x\\ y", [("a", "x y")]),
            ("a=trailing\\", [("a", "trailing")]),
            ("a=", [("a", "")]),
        ],
    )
    def test_libpq_quoting_rules(self, given: str, pairs: list[tuple[str, str]]) -> None:
        """Spaces around '=', single quotes for spaces or empty values, backslash escapes
        inside and outside quotes, as libpq reads them."""
        assert libpq_params(given) == pairs

    @pytest.mark.parametrize("given", ["a", "a b=1", "a='open", "a=1 b"])
    def test_malformed_strings_are_errors(self, given: str) -> None:
        """A keyword without '=' or an unterminated quote is a ValueError."""
        with pytest.raises(ValueError, match=r"missing '='|unterminated"):
            libpq_params(given)

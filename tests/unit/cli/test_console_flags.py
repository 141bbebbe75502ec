"""The console's flags become its settings: dev mode without credentials, HTTPS and TLS with
them, and `assay up` leaving the console out (saying why) only when its defaults cannot work."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from assay.cli import console_cmds
from assay.cli.common import CliError
from assay.cli.main import build_parser
from assay.cli.serve_security import resolve_security
from assay.runtime.auth.dev_credentials import DevCredentials, write_dev_credentials

TARGETS = {
    "adjudication": "127.0.0.1:50053",
    "planner": "127.0.0.1:50052",
    "resolver": "127.0.0.1:50051",
}


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> DevCredentials:
    return write_dev_credentials(tmp_path_factory.mktemp("console") / "creds")


def parse(*words: str) -> argparse.Namespace:
    return build_parser().parse_args(list(words))


def plan_for_up(*flags: str) -> console_cmds.ConsolePlan:
    args = parse("up", *flags)
    serving = resolve_security(args, True, TARGETS["resolver"], up=True)
    return console_cmds.for_up(args, serving, TARGETS)


class TestUp:
    def test_without_credentials_the_console_is_in_dev_mode(self) -> None:
        """Plain HTTP on loopback, no TLS to the services, sign-in by typed name."""
        plan = plan_for_up("--console-port", "8080")
        assert plan.settings is not None
        assert plan.settings.dev_mode
        assert not plan.settings.https
        assert plan.settings.ca is None
        assert plan.settings.base_url == "http://127.0.0.1:8080"
        assert plan.warnings == ()

    def test_credentials_give_https_tls_and_the_example_principals(
        self, creds: DevCredentials
    ) -> None:
        plan = plan_for_up("--credentials", str(creds.root))
        assert plan.settings is not None
        assert (plan.settings.tls_cert, plan.settings.tls_key) == (
            creds.server_cert,
            creds.server_key,
        )
        assert plan.settings.ca == creds.ca
        assert plan.settings.dev_credentials == creds.root
        assert not plan.settings.dev_mode
        assert plan.settings.adjudication == TARGETS["adjudication"]

    def test_no_console_leaves_it_out_quietly(self) -> None:
        assert plan_for_up("--no-console") == console_cmds.ConsolePlan(None)

    def test_defaults_that_cannot_work_leave_it_out_saying_why(self) -> None:
        """Off loopback in dev mode the console cannot be safe: the services still start."""
        plan = plan_for_up(
            "--host", "0.0.0.0", "--insecure-plaintext", "--insecure-no-auth", "--db", "x.db"
        )
        assert plan.settings is None
        (warning,) = plan.warnings
        assert "the console is not served" in warning
        assert "loopback only" in warning

    def test_a_console_flag_given_outright_that_cannot_work_is_exit_2(
        self, creds: DevCredentials
    ) -> None:
        with pytest.raises(CliError) as caught:
            plan_for_up(
                "--host",
                "0.0.0.0",
                "--credentials",
                str(creds.root),
                "--dev-credentials",
                str(creds.root),
            )
        assert caught.value.exit_code == 2
        assert "loopback only" in str(caught.value)


class TestServe:
    def test_targets_trust_and_server_name(self, creds: DevCredentials) -> None:
        args = parse(
            "serve", "console", "--credentials", str(creds.root),
            "--adjudication", "adjudication:50053", "--planner", "planner:50052",
            "--resolver", "dns:///resolver:50051", "--services-server-name", "localhost",
        )  # fmt: skip
        settings = console_cmds.for_serve(args, 8080)
        assert settings.https
        assert settings.ca == creds.ca
        assert settings.services_server_name == "localhost"
        assert (settings.adjudication, settings.planner, settings.resolver) == (
            "adjudication:50053",
            "planner:50052",
            "dns:///resolver:50051",
        )

    def test_an_unreadable_file_is_exit_2_naming_it(self, tmp_path: Path) -> None:
        args = parse(
            "serve", "console", "--services-ca", str(tmp_path / "absent.pem"),
            "--dev-credentials", str(tmp_path),
        )  # fmt: skip
        with pytest.raises(CliError, match=r"cannot read .*absent\.pem") as caught:
            console_cmds.for_serve(args, 8080)
        assert caught.value.exit_code == 2

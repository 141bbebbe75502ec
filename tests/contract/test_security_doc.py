"""docs/security.md says what the code does: its role table is the contract's access options,
row for row; its roles, error reasons and policy examples are the real ones; and every server
flag it lists is one ``assay serve`` and ``assay up`` take, with the environment twin it names.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

import pytest

from assay.cli.main import build_parser
from assay.errors import Reason
from assay.runtime.auth import Role
from assay.runtime.auth.policy import parse_policy
from assay.v1 import (
    access_pb2,
    adjudication_service_pb2,
    planner_service_pb2,
    resolver_service_pb2,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
BEGIN, END = "<!-- role-table:begin -->", "<!-- role-table:end -->"
SERVICES = [
    resolver_service_pb2.DESCRIPTOR.services_by_name["ResolverService"],
    planner_service_pb2.DESCRIPTOR.services_by_name["PlannerService"],
    adjudication_service_pb2.DESCRIPTOR.services_by_name["AdjudicationService"],
]

Row = tuple[str, frozenset[str], bool]


def text() -> str:
    return DOC.read_text(encoding="utf-8")


def section(title: str) -> str:
    """The body of the ``## title`` section."""
    body = text().split(f"\n## {title}\n", 1)[1]
    return body.split("\n## ", 1)[0]


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def contract_rows() -> list[Row]:
    """(Service.Method, roles, tenant-scoped) for every RPC, in contract order."""
    rows = []
    for service in SERVICES:
        for method in service.methods:
            rule = method.GetOptions().Extensions[access_pb2.access]
            roles = frozenset(
                access_pb2.Role.Name(number).removeprefix("ROLE_").lower() for number in rule.roles
            )
            rows.append((f"{service.name}.{method.name}", roles, rule.tenant_scoped))
    return rows


def render(rows: list[Row]) -> str:
    """The table as it should stand in the doc (roles in the contract enum's order)."""
    order = [
        value.name.removeprefix("ROLE_").lower() for value in access_pb2.Role.DESCRIPTOR.values
    ]
    lines = [BEGIN, "| RPC | Roles (any one) | Tenant-scoped |", "| --- | --- | --- |"]
    for rpc, roles, scoped in rows:
        listed = ", ".join(role for role in order if role in roles)
        lines.append(f"| `{rpc}` | {listed} | {'yes' if scoped else 'no'} |")
    return "\n".join([*lines, END])


def documented_rows() -> list[Row]:
    doc = text()
    assert (doc.count(BEGIN), doc.count(END)) == (1, 1), "the role table markers are missing"
    block = doc.split(BEGIN, 1)[1].split(END, 1)[0]
    lines = [line for line in block.strip().splitlines() if line.strip()]
    assert cells(lines[0]) == ["RPC", "Roles (any one)", "Tenant-scoped"], lines[0]
    rows = []
    for line in lines[2:]:
        rpc, roles, scoped = cells(line)
        assert scoped in ("yes", "no"), line
        listed = frozenset(role.strip() for role in roles.split(","))
        rows.append((rpc.strip("`"), listed, scoped == "yes"))
    return rows


class TestRoleTable:
    def test_matches_the_contract_exactly(self) -> None:
        """Every RPC once, in contract order, with exactly its roles and scoping."""
        expected = contract_rows()
        assert documented_rows() == expected, (
            "docs/security.md's role table is out of date; replace it with:\n" + render(expected)
        )

    def test_is_written_as_rendered(self) -> None:
        """Byte for byte what ``render`` makes (roles in enum order), so the hint above is
        what a fix pastes."""
        assert render(contract_rows()) in text()

    def test_covers_every_role_description(self) -> None:
        """The role list describes each role of the contract, once."""
        body = section("Roles, and the role of every RPC").split(BEGIN)[0]
        described = re.findall(r"^\| `(\w+)` \|", body, flags=re.MULTILINE)
        assert sorted(described) == sorted(role.value for role in Role)


class TestVocabulary:
    def test_error_reasons_are_real(self) -> None:
        """Every ERROR_REASON_… the doc names is in the contract's vocabulary."""
        named = set(re.findall(r"ERROR_REASON_[A-Z_]+", text()))
        assert named, "the doc names no error reason"
        assert named <= {reason.value for reason in Reason}, named - {r.value for r in Reason}

    @pytest.mark.parametrize(
        "reason",
        [
            Reason.CREDENTIALS_MISSING,
            Reason.CREDENTIALS_INVALID,
            Reason.CREDENTIALS_EXPIRED,
            Reason.ROLE_REQUIRED,
            Reason.IDENTITY_MISMATCH,
            Reason.TENANT_NOT_PERMITTED,
            Reason.FIXTURE_REVIEWERS_DISABLED,
        ],
    )
    def test_error_table_lists_each_trust_reason(self, reason: Reason) -> None:
        assert f"`{reason.value}`" in section("How a call is admitted")

    def test_dev_mode_warning_is_quoted_as_printed(self) -> None:
        """The dev-mode section shows the warning line a server really prints."""
        from assay.runtime.security import DEV_MODE_WARNING

        assert DEV_MODE_WARNING in section("Dev mode")

    def test_policy_examples_parse(self) -> None:
        """The TOML examples of the policy section and the mTLS section are valid policies."""
        for title in ("The auth policy file", "TLS and mutual TLS"):
            blocks = re.findall(r"```toml\n(.*?)```", section(title), flags=re.DOTALL)
            assert blocks, title
            for block in blocks:
                parse_policy(tomllib.loads(block), Path("/etc/assay"))


def _subcommand(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise AssertionError("assay has no subcommands")


def documented_flags() -> list[tuple[str, str]]:
    """(flag, environment twin) for each flag of the doc's server flag table."""
    pairs: list[tuple[str, str]] = []
    for line in section("Server flags").splitlines():
        if not line.startswith("| `--"):
            continue
        flag_cell, env_cell, _ = cells(line)
        flags = re.findall(r"`(--[a-z-]+)", flag_cell)
        envs = re.findall(r"`(ASSAY_[A-Z_]+)`", env_cell)
        assert len(flags) == len(envs), line
        pairs += zip(flags, envs, strict=True)
    return pairs


class TestServerFlags:
    def test_the_table_lists_flags(self) -> None:
        assert len(documented_flags()) >= 12

    @pytest.mark.parametrize("command", ["serve", "up"])
    def test_each_flag_exists_with_its_environment_twin(self, command: str) -> None:
        """`assay serve` and `assay up` take each documented flag, whose help names its env."""
        helps = {
            option: action.help or ""
            for action in _subcommand(command)._actions
            for option in action.option_strings
        }
        for flag, env in documented_flags():
            assert flag in helps, f"assay {command} has no {flag}"
            assert env in helps[flag], f"assay {command} {flag}: help does not name {env}"

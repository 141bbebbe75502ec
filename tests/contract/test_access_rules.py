"""Every RPC says who may call it, in the contract, and a client can read it back.

The runtime enforces each method's ``(assay.v1.access)`` option (``runtime.auth.access``);
these tests hold the contract to having one on every RPC of every service, naming at
least one real role, refuse to serve a method without one, and show the option (and the
``Role``, ``AccessRule`` and ``ErrorReason`` vocabulary) through server reflection with
grpcurl, the way a client author would find it: over TLS, with no token.
"""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor

import assay.v1
from assay.runtime.auth import Role, access_rule
from assay.runtime.handlers import ServiceHandler
from assay.v1 import access_pb2
from tests.support.grpcurl import grpcurl
from tests.support.processes import AssayProcess, assay_process, free_port
from tests.support.secure import SecureStack, secure_stack

EXPECTED_SERVICES = {
    "assay.v1.ResolverService",
    "assay.v1.PlannerService",
    "assay.v1.AdjudicationService",
    "assay.v1.ApprovalService",
}
# The stack's name for the service that serves each of them.
STACK_NAME = {
    "assay.v1.ResolverService": "resolver",
    "assay.v1.PlannerService": "planner",
    "assay.v1.AdjudicationService": "adjudication",
    "assay.v1.ApprovalService": "adjudication",
}


def contract_services() -> list[ServiceDescriptor]:
    """Every service any generated ``assay.v1`` module declares (found, not listed)."""
    found: dict[str, ServiceDescriptor] = {}
    for module in pkgutil.iter_modules(assay.v1.__path__):
        if module.name.endswith("_pb2"):
            loaded = importlib.import_module(f"assay.v1.{module.name}")
            for service in loaded.DESCRIPTOR.services_by_name.values():
                found[service.full_name] = service
    return [found[name] for name in sorted(found)]


SERVICES = contract_services()
METHODS: list[MethodDescriptor] = [m for s in SERVICES for m in s.methods]


def declared_roles(method: MethodDescriptor) -> set[str]:
    """The role enum names the method's option lists, read straight from the descriptor."""
    rule = method.GetOptions().Extensions[access_pb2.access]
    return {access_pb2.Role.Name(number) for number in rule.roles}


class TestEveryRpcDeclaresItsRoles:
    def test_the_four_services_are_the_contract(self) -> None:
        """The walk below covers exactly the four services (a new one is noticed here)."""
        assert {s.full_name for s in SERVICES} == EXPECTED_SERVICES
        assert len(METHODS) >= 20

    @pytest.mark.parametrize("method", METHODS, ids=lambda m: m.full_name)
    def test_rpc_has_the_access_option_with_a_role(self, method: MethodDescriptor) -> None:
        """The option is present, names at least one role, never ROLE_UNSPECIFIED nor twice."""
        options = method.GetOptions()
        assert options.HasExtension(access_pb2.access), (
            f"{method.full_name} has no (assay.v1.access) option"
        )
        rule = options.Extensions[access_pb2.access]
        assert list(rule.roles), f"{method.full_name}: (assay.v1.access) names no role"
        assert access_pb2.ROLE_UNSPECIFIED not in rule.roles, method.full_name
        assert len(set(rule.roles)) == len(rule.roles), f"{method.full_name} repeats a role"

    @pytest.mark.parametrize("method", METHODS, ids=lambda m: m.full_name)
    def test_runtime_reads_the_same_rule(self, method: MethodDescriptor) -> None:
        """``access_rule`` (what the gate enforces) agrees with the raw option."""
        rule = access_rule(method)
        assert {role.proto_name for role in rule.roles} == declared_roles(method)
        expected = method.GetOptions().Extensions[access_pb2.access].tenant_scoped
        assert rule.tenant_scoped == expected

    def test_runtime_roles_mirror_the_contract_enum(self) -> None:
        """Each non-zero ``assay.v1.Role`` has a runtime ``Role`` and nothing more."""
        contract = {value.name for value in access_pb2.Role.DESCRIPTOR.values if value.number}
        assert {role.proto_name for role in Role} == contract


def _service_without_rules() -> ServiceDescriptor:
    """A service in a private pool: one method with no option, one with an empty one."""
    file = descriptor_pb2.FileDescriptorProto(name="norule.proto", package="norule")
    file.syntax = "proto3"
    file.message_type.add(name="Empty")
    service = file.service.add(name="NoRuleService")
    service.method.add(name="Bare", input_type=".norule.Empty", output_type=".norule.Empty")
    empty = service.method.add(
        name="NoRole", input_type=".norule.Empty", output_type=".norule.Empty"
    )
    empty.options.Extensions[access_pb2.access].tenant_scoped = True
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return pool.FindServiceByName("norule.NoRuleService")


class TestAMethodWithoutARuleNeverServes:
    def test_access_rule_refuses_a_method_without_the_option(self) -> None:
        """No option: TypeError naming the method."""
        bare = _service_without_rules().methods_by_name["Bare"]
        with pytest.raises(TypeError, match=r"norule\.NoRuleService\.Bare has no"):
            access_rule(bare)

    def test_access_rule_refuses_an_option_without_roles(self) -> None:
        """An option naming no role: TypeError naming the method."""
        no_role = _service_without_rules().methods_by_name["NoRole"]
        with pytest.raises(TypeError, match=r"NoRuleService\.NoRole: .* names no role"):
            access_rule(no_role)

    def test_the_handler_refuses_to_build(self) -> None:
        """The shared handler, and so the server, will not start such a service."""

        class Servicer:
            async def Bare(self, request: object, context: object) -> None: ...

            async def NoRole(self, request: object, context: object) -> None: ...

        with pytest.raises(TypeError, match=r"no \(assay\.v1\.access\) option"):
            ServiceHandler(_service_without_rules(), Servicer())


# grpcurl prints each RPC of a described service as
#   rpc Name ( .Req ) returns ( .Resp ) {
#     option (.assay.v1.access) = { roles:ROLE_A roles:ROLE_B tenant_scoped:true };
#   }
_RPC = re.compile(r"^\s*rpc (\w+) \(")
_ACCESS = re.compile(r"option \(\.?assay\.v1\.access\) = \{(?P<body>[^}]*)\}")


def described_access(description: str) -> dict[str, tuple[set[str], bool]]:
    """RPC name -> (roles, tenant_scoped) as grpcurl's ``describe SERVICE`` shows them."""
    shown: dict[str, tuple[set[str], bool]] = {}
    current = ""
    for line in description.splitlines():
        rpc = _RPC.match(line)
        if rpc:
            current = rpc.group(1)
            continue
        access = _ACCESS.search(line)
        if access and current:
            body = access.group("body")
            scoped = re.search(r"tenant_scoped\s*:\s*true", body) is not None
            shown[current] = (set(re.findall(r"ROLE_[A-Z_]+", body)), scoped)
    return shown


@pytest.fixture
async def tls_stack(tmp_path: Path) -> AsyncIterator[SecureStack]:
    async with secure_stack(tmp_path) as stack:
        yield stack


@pytest.mark.external
class TestReflectionShowsTheRules:
    @pytest.mark.parametrize("service", sorted(EXPECTED_SERVICES))
    async def test_describe_over_tls_without_a_token_shows_each_rpcs_roles(
        self, tls_stack: SecureStack, service: str
    ) -> None:
        """`grpcurl -cacert CA describe SERVICE` with no token prints every RPC's option,
        and what it prints is what the descriptor says."""
        result = await asyncio.to_thread(
            grpcurl,
            "-cacert",
            str(tls_stack.creds.ca),
            tls_stack.target(STACK_NAME[service]),
            "describe",
            service,
        )
        assert result.returncode == 0, result.stderr
        shown = described_access(result.stdout)
        declared = next(s for s in SERVICES if s.full_name == service)
        assert set(shown) == {m.name for m in declared.methods}, result.stdout
        for method in declared.methods:
            roles, scoped = shown[method.name]
            assert roles == declared_roles(method), method.full_name
            rule = method.GetOptions().Extensions[access_pb2.access]
            assert scoped == rule.tenant_scoped, method.full_name


@pytest.fixture(scope="module")
def adjudication_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AssayProcess]:
    """A real ``assay serve adjudication`` process: its descriptor pool holds only what the
    server itself imports, unlike this test process."""
    directory = tmp_path_factory.mktemp("reflection")
    port = free_port()
    args = ["serve", "adjudication", "--port", str(port), "--db", str(directory / "a.db")]
    with assay_process(args, directory / "adjudication.log", port) as process:
        yield process


@pytest.mark.external
class TestReflectionShowsTheVocabulary:
    @pytest.mark.parametrize(
        ("symbol", "expected"),
        [
            ("assay.v1.Role", ["enum Role {", "ROLE_READER = 1;", "ROLE_SERVICE = 6;"]),
            ("assay.v1.AccessRule", ["message AccessRule {", "bool tenant_scoped = 2;"]),
            (
                "assay.v1.ErrorReason",
                [
                    "enum ErrorReason {",
                    "ERROR_REASON_CREDENTIALS_MISSING",
                    "ERROR_REASON_CREDENTIALS_INVALID",
                    "ERROR_REASON_CREDENTIALS_EXPIRED",
                    "ERROR_REASON_ROLE_REQUIRED",
                    "ERROR_REASON_IDENTITY_MISMATCH",
                    "ERROR_REASON_TENANT_NOT_PERMITTED",
                ],
            ),
        ],
    )
    def test_describe_symbol(
        self, adjudication_process: AssayProcess, symbol: str, expected: list[str]
    ) -> None:
        """A client can look up the roles, the rule and every error reason by name."""
        result = grpcurl("-plaintext", adjudication_process.target, "describe", symbol)
        assert result.returncode == 0, result.stderr
        for text in expected:
            assert text in result.stdout, f"{symbol}: {text!r} missing from\n{result.stdout}"

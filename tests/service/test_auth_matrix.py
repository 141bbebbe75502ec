"""Role × RPC, driven from the contract: every RPC of the three services, called by a principal
holding exactly one role, is admitted when its ``(assay.v1.access)`` option names that role and
refused with PERMISSION_DENIED (ERROR_REASON_ROLE_REQUIRED) otherwise; with no token every RPC
is UNAUTHENTICATED (ERROR_REASON_CREDENTIALS_MISSING); health and reflection stay open.

One secure stack (real TLS, real ES256 tokens, the real services) serves the whole module.
Requests go out as raw bytes over a generic channel method, so no RPC needs code of its own:
an empty request (most mutating RPCs then fail validation, which is past the gate) and
unparseable bytes (the gate runs before parsing, so a permitted caller gets
ERROR_REASON_MALFORMED_REQUEST and anyone else the authentication or role refusal).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
import pytest_asyncio
from google.protobuf.descriptor import MethodDescriptor
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from assay.runtime.auth.dev_credentials import Grantee
from assay.runtime.status import DecodedError, decode_rpc_error
from assay.v1 import (
    access_pb2,
    adjudication_service_pb2,
    approval_service_pb2,
    planner_service_pb2,
    resolver_service_pb2,
)
from tests.support.secure import SecureStack, secure_stack

# The stack's name for each service, and the service's descriptor.
SERVICES = {
    "resolver": resolver_service_pb2.DESCRIPTOR.services_by_name["ResolverService"],
    "planner": planner_service_pb2.DESCRIPTOR.services_by_name["PlannerService"],
    "adjudication": adjudication_service_pb2.DESCRIPTOR.services_by_name["AdjudicationService"],
}
# Served beside another service, on its port: ApprovalService by the adjudication process.
HOSTED = {
    "adjudication": approval_service_pb2.DESCRIPTOR.services_by_name["ApprovalService"],
}
STACK_NAME = {
    **{service.full_name: name for name, service in SERVICES.items()},
    **{service.full_name: name for name, service in HOSTED.items()},
}
METHODS: list[MethodDescriptor] = [
    m for service in (*SERVICES.values(), *HOSTED.values()) for m in service.methods
]

# One principal per role, holding exactly that role, for every tenant. The SERVICE principal
# is named "planner" so the stack's planner calls its resolver with a token of its own.
ROLE_NAMES = [value.name for value in access_pb2.Role.DESCRIPTOR.values if value.number]


def principal_name(role: str) -> str:
    short = role.removeprefix("ROLE_").lower()
    return "planner" if short == "service" else short


GRANTEES = tuple(
    Grantee(principal_name(role), (role.removeprefix("ROLE_").lower(),), ("*",))
    for role in ROLE_NAMES
)
CASES = [(method, role) for method in METHODS for role in ROLE_NAMES]
MALFORMED = b"\xff\xff\xff\xff\x0f"
CALL_TIMEOUT_SECONDS = 20.0


def case_id(value: object) -> str:
    if isinstance(value, MethodDescriptor):
        return f"{value.containing_service.name}.{value.name}"
    return str(value).removeprefix("ROLE_").lower()


def permitted_roles(method: MethodDescriptor) -> set[str]:
    """The role names the contract's option grants, read from the descriptor itself."""
    rule = method.GetOptions().Extensions[access_pb2.access]
    return {access_pb2.Role.Name(number) for number in rule.roles}


@dataclass
class Matrix:
    stack: SecureStack
    channels: dict[str, grpc.aio.Channel]

    async def call(
        self,
        method: MethodDescriptor,
        metadata: Sequence[tuple[str, str]],
        payload: bytes = b"",
    ) -> DecodedError | None:
        """Send ``payload`` as the request; the decoded failure, or None when it succeeded."""
        channel = self.channels[STACK_NAME[method.containing_service.full_name]]
        path = f"/{method.containing_service.full_name}/{method.name}"
        try:
            if method.server_streaming:
                stream = channel.unary_stream(path)(
                    payload, metadata=tuple(metadata), timeout=CALL_TIMEOUT_SECONDS
                )
                async for _ in stream:
                    pass
            else:
                await channel.unary_unary(path)(
                    payload, metadata=tuple(metadata), timeout=CALL_TIMEOUT_SECONDS
                )
        except grpc.aio.AioRpcError as error:
            return decode_rpc_error(error)
        return None

    def token_of(self, role: str) -> tuple[tuple[str, str], ...]:
        return self.stack.auth(principal_name(role))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def matrix(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Matrix]:
    directory: Path = tmp_path_factory.mktemp("auth-matrix")
    async with secure_stack(directory, principals=GRANTEES) as stack:
        channels = {name: stack.channel(name) for name in SERVICES}
        try:
            yield Matrix(stack, channels)
        finally:
            for channel in channels.values():
                await channel.close()


def is_refused_by_the_gate(failure: DecodedError | None) -> bool:
    """Whether the call stopped at authentication or at the role check."""
    if failure is None:
        return False
    if failure.code == grpc.StatusCode.UNAUTHENTICATED:
        return True
    return (
        failure.code == grpc.StatusCode.PERMISSION_DENIED
        and failure.reason == "ERROR_REASON_ROLE_REQUIRED"
    )


def test_the_matrix_covers_every_rpc_and_role() -> None:
    """Every RPC of the four services, the streaming ones included, and all seven roles."""
    assert len(ROLE_NAMES) == 7
    assert any(method.server_streaming for method in METHODS)
    assert len(CASES) == len(METHODS) * len(ROLE_NAMES)


@pytest.mark.asyncio(loop_scope="module")
class TestRoleMatrix:
    @pytest.mark.parametrize(("method", "role"), CASES, ids=case_id)
    async def test_empty_request(self, matrix: Matrix, method: MethodDescriptor, role: str) -> None:
        """A granted role gets past the gate (whatever the servicer then says of an empty
        request); any other role is PERMISSION_DENIED naming the roles the RPC needs."""
        failure = await matrix.call(method, matrix.token_of(role))
        allowed = permitted_roles(method)
        if role in allowed:
            assert not is_refused_by_the_gate(failure), failure
            return
        assert failure is not None, f"{role} called {method.full_name}"
        assert failure.code == grpc.StatusCode.PERMISSION_DENIED, failure
        assert failure.reason == "ERROR_REASON_ROLE_REQUIRED", failure
        required = set(failure.metadata["required_roles"].split(", "))
        assert required == {name.removeprefix("ROLE_").lower() for name in allowed}
        assert principal_name(role) in failure.message  # names who was refused

    @pytest.mark.parametrize(("method", "role"), CASES, ids=case_id)
    async def test_unparseable_request(
        self, matrix: Matrix, method: MethodDescriptor, role: str
    ) -> None:
        """The gate runs before the request is parsed: a granted role reaches the parser
        (MALFORMED_REQUEST), any other role is refused without its bytes being read."""
        failure = await matrix.call(method, matrix.token_of(role), MALFORMED)
        assert failure is not None
        if role in permitted_roles(method):
            assert failure.code == grpc.StatusCode.INVALID_ARGUMENT, failure
            assert failure.reason == "ERROR_REASON_MALFORMED_REQUEST", failure
        else:
            assert failure.code == grpc.StatusCode.PERMISSION_DENIED, failure
            assert failure.reason == "ERROR_REASON_ROLE_REQUIRED", failure


@pytest.mark.asyncio(loop_scope="module")
class TestNoToken:
    @pytest.mark.parametrize("method", METHODS, ids=case_id)
    @pytest.mark.parametrize("payload", [b"", MALFORMED], ids=["empty", "unparseable"])
    async def test_every_rpc_needs_a_credential(
        self, matrix: Matrix, method: MethodDescriptor, payload: bytes
    ) -> None:
        """No authorization header: UNAUTHENTICATED, CREDENTIALS_MISSING, before parsing."""
        failure = await matrix.call(method, (), payload)
        assert failure is not None, f"{method.full_name} answered a caller with no token"
        assert failure.code == grpc.StatusCode.UNAUTHENTICATED, failure
        assert failure.reason == "ERROR_REASON_CREDENTIALS_MISSING", failure


@pytest.mark.asyncio(loop_scope="module")
class TestOpenServices:
    @pytest.mark.parametrize("service", sorted(SERVICES))
    async def test_health_check_needs_no_token(self, matrix: Matrix, service: str) -> None:
        """grpc.health.v1.Health/Check answers SERVING over TLS with no credential."""
        stub = health_pb2_grpc.HealthStub(matrix.channels[service])
        full_name = SERVICES[service].full_name
        for name in ("", full_name):
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING

    @pytest.mark.parametrize("service", sorted(SERVICES))
    async def test_reflection_needs_no_token(self, matrix: Matrix, service: str) -> None:
        """Server reflection lists the service over TLS with no credential."""
        stub = reflection_pb2_grpc.ServerReflectionStub(matrix.channels[service])
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        replies = [reply async for reply in stub.ServerReflectionInfo(iter([request]))]
        listed = {s.name for r in replies for s in r.list_services_response.service}
        assert SERVICES[service].full_name in listed

"""The Python clients carry credentials to real servers: TLS, bearer tokens, client certificates.

Every server here is a real gRPC server on loopback with TLS and JWT
authentication on (``secure_stack``: a local CA, ES256 tokens, an auth
policy), so each test proves what crosses the wire: the certificate checks,
the token the server verified, the role it found.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from assay.client import (
    AdjudicationClient,
    AsyncAdjudicationClient,
    AsyncPlannerClient,
    AsyncResolverClient,
    Credentials,
    NotFoundError,
    PermissionDeniedError,
    PlannerClient,
    ResolverClient,
    UnauthenticatedError,
    UnavailableError,
)
from assay.client.channel import aio_channel, sync_channel
from assay.executor.stack import local_stack
from assay.runtime.auth import Gate
from assay.runtime.auth.dev_credentials import write_dev_credentials
from assay.runtime.config import ServerConfig
from assay.runtime.security import Security
from assay.runtime.server import serving
from assay.runtime.tls import ServerTls
from assay.services.registry import SERVICES, ServeOptions
from assay.v1 import adjudication_service_pb2 as adj
from tests.support.secure import SecureStack, secure_stack
from tests.support.secure_processes import client_certificate

MISSING = "ERROR_REASON_CREDENTIALS_MISSING"
INVALID = "ERROR_REASON_CREDENTIALS_INVALID"
ROLE_REQUIRED = "ERROR_REASON_ROLE_REQUIRED"


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[SecureStack]:
    async with secure_stack(tmp_path) as running:
        yield running


def as_(stack: SecureStack, name: str) -> Credentials:
    return Credentials.from_folder(stack.creds.root, name)


def replace_atomically(path: Path, text: str) -> None:
    """How a token is usually rotated: write aside, then rename over the old file."""
    fresh = path.with_name(path.name + ".new")
    fresh.write_text(text, encoding="ascii")
    os.replace(fresh, path)


class TestAsyncClientsOverTls:
    async def test_every_service_answers_a_caller_with_a_permitted_token(
        self, stack: SecureStack
    ) -> None:
        """Resolver, planner and adjudication each verify the operator's token over TLS."""
        creds = as_(stack, "operator")
        async with (
            AsyncResolverClient(stack.targets.resolver, credentials=creds) as resolver,
            AsyncPlannerClient(stack.targets.planner, credentials=creds) as planner,
            AsyncAdjudicationClient(stack.targets.adjudication, credentials=creds) as adjudication,
        ):
            assert "human_review" in await resolver.policy()
            assert [p async for p in planner.probes()]
            reviewer = await adjudication.add_reviewer("carol", "MECHANISM_TEST_FIXTURE")
            assert reviewer.identity_subject == "carol"
            assert [r.reviewer_id async for r in adjudication.reviewers()] == ["carol"]

    async def test_the_audit_actor_is_the_token_subject(self, stack: SecureStack) -> None:
        """What the server recorded as the actor is the subject of the token the client sent."""
        async with AsyncAdjudicationClient(
            stack.targets.adjudication, credentials=as_(stack, "operator")
        ) as operator:
            await operator.add_reviewer("alice", "MECHANISM_TEST_FIXTURE")
            events = [e async for e in operator.audit_events()]
        assert [e.actor.subject for e in events] == ["operator"]

    async def test_a_static_token_is_sent_like_a_token_file(self, stack: SecureStack) -> None:
        """``token=`` (the value itself) authenticates the same as ``token_file=``."""
        creds = Credentials(ca=stack.creds.ca, token=stack.creds.token("alice"))
        async with AsyncResolverClient(stack.targets.resolver, credentials=creds) as resolver:
            assert await resolver.policy()

    async def test_tls_without_a_token_is_unauthenticated(self, stack: SecureStack) -> None:
        """The TLS handshake succeeds, the call is refused: CREDENTIALS_MISSING, typed."""
        creds = Credentials(ca=stack.creds.ca)
        async with AsyncResolverClient(stack.targets.resolver, credentials=creds) as resolver:
            with pytest.raises(UnauthenticatedError) as caught:
                await resolver.policy()
        assert caught.value.reason == MISSING

    async def test_a_token_from_another_issuer_key_is_unauthenticated(
        self, stack: SecureStack, tmp_path: Path
    ) -> None:
        """A token signed by a key the server does not know: CREDENTIALS_INVALID."""
        stranger = write_dev_credentials(tmp_path / "stranger")
        creds = Credentials(ca=stack.creds.ca, token_file=stranger.token_path("operator"))
        async with AsyncResolverClient(stack.targets.resolver, credentials=creds) as resolver:
            with pytest.raises(UnauthenticatedError) as caught:
                await resolver.policy()
        assert caught.value.reason == INVALID
        assert stranger.token("operator") not in str(caught.value)

    async def test_a_role_the_caller_lacks_is_permission_denied(self, stack: SecureStack) -> None:
        """alice (reviewer) may not list reviewers: PermissionDeniedError, ROLE_REQUIRED."""
        async with AsyncAdjudicationClient(
            stack.targets.adjudication, credentials=as_(stack, "alice")
        ) as alice:
            with pytest.raises(PermissionDeniedError) as caught:
                await alice.list_reviewers()
        assert caught.value.reason == ROLE_REQUIRED

    async def test_another_tenants_case_reads_as_not_found(self, stack: SecureStack) -> None:
        """mallory (tenant globex) asking for an acme case gets NotFoundError: no hint that
        it exists."""
        async with (
            AsyncAdjudicationClient(
                stack.targets.adjudication, credentials=as_(stack, "operator")
            ) as operator,
            AsyncAdjudicationClient(
                stack.targets.adjudication, credentials=as_(stack, "mallory")
            ) as mallory,
        ):
            case = await operator.enqueue(
                tenant="acme",
                subject="api:x",
                predicate="idempotency.mode",
                candidate_values=["a", "b"],
                local_verdict="a",
            )
            with pytest.raises(NotFoundError):
                await mallory.get_blinded_case(adj.GetBlindedCaseRequest(case_id=case.case_id))

    async def test_plaintext_to_a_tls_server_is_unavailable(self, stack: SecureStack) -> None:
        """No credentials, so no TLS: the server's TLS listener will not talk plaintext."""
        async with AsyncResolverClient(stack.targets.resolver, timeout=5) as resolver:
            with pytest.raises(UnavailableError):
                await resolver.policy()

    async def test_a_server_certificate_from_another_ca_is_refused(
        self, stack: SecureStack, tmp_path: Path
    ) -> None:
        """Trusting the wrong CA fails the handshake; the token is never sent."""
        stranger = write_dev_credentials(tmp_path / "stranger")
        creds = Credentials(ca=stranger.ca, token_file=stack.creds.token_path("operator"))
        async with AsyncResolverClient(
            stack.targets.resolver, timeout=5, credentials=creds
        ) as resolver:
            with pytest.raises(UnavailableError) as caught:
                await resolver.policy()
        assert "CERTIFICATE_VERIFY_FAILED" in caught.value.message


class TestTokenRotation:
    @pytest.mark.parametrize("rotate", ["rename", "rewrite"])
    async def test_a_rotated_token_file_is_used_on_the_next_call(
        self, stack: SecureStack, tmp_path: Path, rotate: str
    ) -> None:
        """The file changes from alice's token to the operator's: the next call is the
        operator's, with no new client and no wait (replaced by rename or rewritten)."""
        token_file = tmp_path / "current.jwt"
        token_file.write_text(stack.creds.token("alice"), encoding="ascii")
        creds = Credentials(ca=stack.creds.ca, token_file=token_file)
        async with AsyncAdjudicationClient(stack.targets.adjudication, credentials=creds) as client:
            with pytest.raises(PermissionDeniedError):
                await client.list_reviewers()
            operator = stack.creds.token("operator") + "\n"
            if rotate == "rename":
                replace_atomically(token_file, operator)
            else:
                token_file.write_text(operator, encoding="ascii")
            assert (await client.list_reviewers()).reviewers == []

    async def test_a_half_written_token_file_keeps_the_last_good_token(
        self, stack: SecureStack, tmp_path: Path
    ) -> None:
        """An empty file (a writer caught mid-rotation) does not break calls."""
        token_file = tmp_path / "current.jwt"
        token_file.write_text(stack.creds.token("operator"), encoding="ascii")
        creds = Credentials(ca=stack.creds.ca, token_file=token_file)
        async with AsyncAdjudicationClient(stack.targets.adjudication, credentials=creds) as client:
            await client.list_reviewers()
            token_file.write_text("", encoding="ascii")
            assert (await client.list_reviewers()).reviewers == []


class TestSyncClientsOverTls:
    async def test_the_blocking_clients_carry_the_token_too(self, stack: SecureStack) -> None:
        """The same credentials work for the blocking clients (run in a worker thread, so
        this loop keeps serving), and their refusals are the same typed errors."""
        operator, alice = as_(stack, "operator"), as_(stack, "alice")

        def use() -> tuple[dict[str, float], int, str]:
            with (
                ResolverClient(stack.targets.resolver, credentials=operator) as resolver,
                PlannerClient(stack.targets.planner, credentials=operator) as planner,
                AdjudicationClient(stack.targets.adjudication, credentials=alice) as adjudication,
            ):
                sources = resolver.policy()
                probes = len(list(planner.probes()))
                try:
                    adjudication.freeze("case_x")
                except PermissionDeniedError as error:
                    return sources, probes, error.reason
            return sources, probes, ""

        sources, probes, refusal = await asyncio.to_thread(use)
        assert "human_review" in sources
        assert probes > 0
        assert refusal == ROLE_REQUIRED


def _echo_authorization(request: bytes, context: grpc.ServicerContext) -> bytes:
    metadata = dict(context.invocation_metadata())
    return str(metadata.get("authorization", "")).encode()


@pytest.fixture
async def echo(tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """A plaintext server answering ``/test.Echo/Auth`` with the authorization header it got,
    on a loopback TCP port and on a Unix socket."""
    server = grpc.aio.server()
    method = grpc.unary_unary_rpc_method_handler(_echo_authorization)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("test.Echo", {"Auth": method}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    socket = f"unix:{tmp_path}/echo.sock"
    server.add_insecure_port(socket)
    await server.start()
    try:
        yield {"ipv4": f"127.0.0.1:{port}", "localhost": f"localhost:{port}", "unix": socket}
    finally:
        await server.stop(None)


class TestPlaintextOnLoopback:
    @pytest.mark.parametrize("where", ["ipv4", "localhost", "unix"])
    async def test_the_header_on_the_wire_is_bearer_and_the_token(
        self, echo: dict[str, str], where: str, tmp_path: Path
    ) -> None:
        """Exactly ``authorization: Bearer <token>`` arrives, from the asyncio and the blocking
        channel helpers alike, over plaintext to this machine (TCP loopback or Unix socket)."""
        token_file = tmp_path / "t.jwt"
        token_file.write_text("header.payload.signature\n", encoding="ascii")
        creds = Credentials(token_file=token_file)
        async with aio_channel(echo[where], [], creds) as channel:
            got = await channel.unary_unary("/test.Echo/Auth")(b"", timeout=5)
        assert got == b"Bearer header.payload.signature"

        def blocking() -> bytes:
            with sync_channel(echo[where], [], creds) as channel:
                answer: bytes = channel.unary_unary("/test.Echo/Auth")(b"", timeout=5)
                return answer

        assert await asyncio.to_thread(blocking) == got

    async def test_a_token_rides_plaintext_to_a_loopback_server(self, tmp_path: Path) -> None:
        """A server with authentication but no TLS, on loopback: the token still arrives
        (gRPC local credentials), and without it the call is refused."""
        creds = write_dev_credentials(tmp_path / "creds")
        gate = Gate.from_files(creds.policy, creds.jwks, client_certificates=False)
        async with local_stack(tmp_path / "assay.db", security=Security(gate=gate)) as plain:
            token = Credentials(token_file=creds.token_path("operator"))
            async with AsyncAdjudicationClient(plain.adjudication, credentials=token) as ok:
                assert (await ok.list_reviewers()).reviewers == []
            async with AsyncAdjudicationClient(plain.adjudication) as anonymous:
                with pytest.raises(UnauthenticatedError) as caught:
                    await anonymous.list_reviewers()
        assert caught.value.reason == MISSING


class TestMutualTls:
    async def test_a_client_certificate_authenticates_the_caller(self, tmp_path: Path) -> None:
        """A resolver requiring client certificates: the client's certificate (CN robot,
        granted reader) is presented and accepted; without one the handshake fails."""
        creds = write_dev_credentials(tmp_path / "creds")
        policy = tmp_path / "mtls-policy.toml"
        policy.write_text(
            '[[principals]]\nissuer = "x509"\nsubject = "robot"\nroles = ["reader"]\n',
            encoding="utf-8",
        )
        cert, key = client_certificate(creds, "robot")
        config = ServerConfig(
            host="127.0.0.1",
            grace_seconds=1.0,
            tls=ServerTls(creds.server_cert, creds.server_key, client_ca=creds.ca),
            gate=Gate.from_files(policy, None, client_certificates=True),
        )
        spec = await SERVICES["resolver"].builder()(
            ServeOptions(port=0, db_path=str(tmp_path / "assay.db"))
        )
        async with serving([spec], config) as (resolver,):
            target = f"127.0.0.1:{resolver.port}"
            robot = Credentials(ca=creds.ca, client_cert=cert, client_key=key)
            async with AsyncResolverClient(target, credentials=robot) as client:
                assert await client.policy()
            async with AsyncResolverClient(
                target, timeout=5, credentials=Credentials(ca=creds.ca)
            ) as client:
                with pytest.raises(UnavailableError):
                    await client.policy()

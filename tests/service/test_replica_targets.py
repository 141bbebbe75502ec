"""Targets naming several replicas, through real servers on loopback.

The Python clients and the planner's resolver channel take a gRPC target listing
several addresses (``ipv4:A:PORT,B:PORT``) and balance calls round_robin over them.
With TLS, the certificate of every replica is still checked against a name: the one
host of the list, or the ``server_name`` given; a wrong name reaches no replica.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from assay.client import AsyncResolverClient, Credentials, ResolverClient, UnavailableError
from assay.runtime.auth.dev_credentials import DevCredentials, write_dev_credentials
from assay.runtime.config import ServerConfig
from assay.runtime.server import serving
from assay.runtime.tls import ClientTls, ServerTls
from assay.services.planner.adapters.resolver_client import ResolverClient as PlannerResolverClient
from assay.services.resolver import service as resolver_service
from tests.service.planner_harness import WatchingResolver, resolver_spec

CALLS = 10


@asynccontextmanager
async def replicas(
    tls: ServerTls | None = None, hosts: tuple[str, str] = ("127.0.0.1", "127.0.0.1")
) -> AsyncIterator[tuple[str, list[WatchingResolver]]]:
    """Two real resolvers (each watched) and the ``ipv4:`` target listing both."""
    watchers = [WatchingResolver(resolver_service.make_servicer()) for _ in hosts]
    async with (
        serving(
            [resolver_spec(watchers[0])], ServerConfig(host=hosts[0], tls=tls, grace_seconds=0)
        ) as first,
        serving(
            [resolver_spec(watchers[1])], ServerConfig(host=hosts[1], tls=tls, grace_seconds=0)
        ) as second,
    ):
        addresses = [f"{host}:{r[0].port}" for host, r in zip(hosts, (first, second), strict=True)]
        yield "ipv4:" + ",".join(addresses), watchers


@pytest.fixture
def creds(tmp_path: Path) -> DevCredentials:
    """A CA and a server certificate for localhost, 127.0.0.1 and ::1."""
    return write_dev_credentials(tmp_path / "creds", ())


def server_tls(creds: DevCredentials) -> ServerTls:
    return ServerTls(creds.server_cert, creds.server_key)


class TestClientsOverSeveralAddresses:
    async def test_async_client_spreads_calls_over_both(self) -> None:
        """The async client's calls reach both replicas of an ``ipv4:`` list."""
        async with replicas() as (target, watchers), AsyncResolverClient(target) as client:
            for _ in range(CALLS):
                await client.get_resolver_policy(timeout=5)
        # Not exactly half each: calls made before the second connection is ready go to
        # the first.
        assert all(w.calls for w in watchers)
        assert sum(len(w.calls) for w in watchers) == CALLS

    async def test_sync_client_spreads_calls_over_both(self) -> None:
        """The blocking client's calls reach both replicas too."""
        async with replicas() as (target, watchers):

            def calls() -> None:
                with ResolverClient(target) as client:
                    for _ in range(CALLS):
                        client.get_resolver_policy(timeout=5)

            await asyncio.to_thread(calls)
        assert all(w.calls for w in watchers)
        assert sum(len(w.calls) for w in watchers) == CALLS

    async def test_tls_verifies_the_one_host_of_the_list(self, creds: DevCredentials) -> None:
        """TLS to ``ipv4:127.0.0.1:A,127.0.0.1:B`` checks 127.0.0.1 (in the certificate)."""
        async with (
            replicas(server_tls(creds)) as (target, watchers),
            AsyncResolverClient(target, credentials=Credentials(ca=creds.ca)) as client,
        ):
            for _ in range(CALLS):
                await client.get_resolver_policy(timeout=5)
        assert all(w.calls for w in watchers)

    async def test_tls_with_a_server_name_over_several_hosts(self, creds: DevCredentials) -> None:
        """Replicas on 127.0.0.1 and 127.0.0.2 (not in the certificate) verify as localhost."""
        async with replicas(server_tls(creds), ("127.0.0.1", "127.0.0.2")) as (target, watchers):
            with pytest.raises(ValueError, match="server name"):
                AsyncResolverClient(target, credentials=Credentials(ca=creds.ca))
            named = Credentials(ca=creds.ca, server_name="localhost")
            async with AsyncResolverClient(target, credentials=named) as client:
                for _ in range(CALLS):
                    await client.get_resolver_policy(timeout=5)
        assert all(w.calls for w in watchers)

    async def test_a_wrong_server_name_reaches_no_replica(self, creds: DevCredentials) -> None:
        """A name the certificates do not carry fails every handshake: UNAVAILABLE, no call."""
        async with replicas(server_tls(creds)) as (target, watchers):
            wrong = Credentials(ca=creds.ca, server_name="assay.example.com")
            async with AsyncResolverClient(target, credentials=wrong, timeout=3) as client:
                with pytest.raises(UnavailableError):
                    await client.get_resolver_policy()
        assert [w.calls for w in watchers] == [[], []]


class TestPlannerChannelOverSeveralAddresses:
    async def test_health_and_calls_over_tls(self, creds: DevCredentials) -> None:
        """The planner's channel verifies each replica and balances its checks over both."""
        async with replicas(server_tls(creds)) as (target, _):
            client = PlannerResolverClient(target, 4 * 1024 * 1024, ClientTls(ca=creds.ca))
            try:
                assert await client.serving(5.0)
            finally:
                await client.close()

    async def test_a_wrong_server_name_is_not_serving(self, creds: DevCredentials) -> None:
        """``--resolver-server-name`` that the certificates lack: the resolver is unreachable."""
        async with replicas(server_tls(creds)) as (target, _):
            tls = ClientTls(ca=creds.ca, server_name="assay.example.com")
            client = PlannerResolverClient(target, 4 * 1024 * 1024, tls)
            try:
                assert not await client.serving(2.0)
            finally:
                await client.close()

    def test_several_hosts_without_a_name_is_refused_at_construction(self) -> None:
        """TLS over hosts with no name to verify fails before any connection is tried."""
        target = "ipv4:10.0.0.5:50051,10.0.0.6:50051"
        with pytest.raises(ValueError, match="server name"):
            PlannerResolverClient(target, 1024, ClientTls())

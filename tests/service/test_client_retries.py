"""Retries happen in grpc-core, from the channel's service config, and only where safe.

A scripted server answers UNAVAILABLE a set number of times before it succeeds.
A read-only RPC is retried transparently; a mutating RPC is retried with the
same body, hence the same auto-filled ``request_id``, which is what lets the
real server recognise the repeat; a client given a channel without the Assay
service config does not retry at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest
from google.protobuf import message as pb_message
from google.protobuf import message_factory

from assay import errors
from assay.client import AsyncAdjudicationClient, AsyncResolverClient, UnavailableError
from assay.client.channel import RETRY_POLICY
from assay.runtime.config import ServerConfig
from assay.runtime.server import ServiceSpec, serving
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import resolver_service_pb2 as rs

RESOLVER = rs.DESCRIPTOR.services_by_name["ResolverService"]
ADJUDICATION = adj.DESCRIPTOR.services_by_name["AdjudicationService"]


class FlakyServicer:
    """Every method fails with UNAVAILABLE ``failures`` times, then returns an empty response."""

    def __init__(self, service: Any, failures: int) -> None:
        self.service = service
        self.failures = failures
        self.requests: list[pb_message.Message] = []

    def __getattr__(self, name: str) -> Callable[[Any, Any], Awaitable[Any]]:
        method = self.service.methods_by_name[name]
        response_type = message_factory.GetMessageClass(method.output_type)

        async def handle(request: Any, context: Any) -> Any:
            self.requests.append(request)
            if len(self.requests) <= self.failures:
                raise errors.Unavailable(errors.Reason.SHUTTING_DOWN, "try again")
            return response_type()

        return handle


@pytest.fixture
def make_server() -> Callable[[Any, int], Any]:
    def make(service: Any, failures: int) -> Any:
        servicer = FlakyServicer(service, failures)
        spec = ServiceSpec(name="flaky", descriptor=service, servicer=servicer, port=0)
        return servicer, serving([spec], ServerConfig(host="127.0.0.1", grace_seconds=0))

    return make


class TestRetries:
    async def test_read_only_rpc_is_retried_until_it_succeeds(
        self, make_server: Callable[[Any, int], Any]
    ) -> None:
        """Two UNAVAILABLE answers, then success: the caller sees only the success."""
        servicer, server = make_server(RESOLVER, 2)
        async with server as services, AsyncResolverClient(services[0].address) as client:
            await client.get_resolver_policy(timeout=10)
        assert len(servicer.requests) == 3

    async def test_mutating_rpc_is_retried_with_the_same_request_id(
        self, make_server: Callable[[Any, int], Any]
    ) -> None:
        """Every attempt of a retried mutating call carries the one auto-filled request_id."""
        servicer, server = make_server(ADJUDICATION, 1)
        async with server as services, AsyncAdjudicationClient(services[0].address) as client:
            await client.freeze_gold_label(adj.FreezeGoldLabelRequest(case_id="c"), timeout=10)
        ids = [r.request_id for r in servicer.requests]
        assert len(ids) == 2
        assert ids[0] == ids[1] != ""

    async def test_retries_give_up_after_the_policys_attempts(
        self, make_server: Callable[[Any, int], Any]
    ) -> None:
        """A service that stays UNAVAILABLE fails the call after the policy's attempts."""
        servicer, server = make_server(RESOLVER, 100)
        async with server as services, AsyncResolverClient(services[0].address) as client:
            with pytest.raises(UnavailableError) as caught:
                await client.get_resolver_policy(timeout=10)
        assert caught.value.reason == "ERROR_REASON_SHUTTING_DOWN"
        assert len(servicer.requests) == RETRY_POLICY["maxAttempts"]

    async def test_a_plain_channel_does_not_retry(
        self, make_server: Callable[[Any, int], Any]
    ) -> None:
        """Retries come from the service config: a bare channel of the caller gets one try."""
        servicer, server = make_server(RESOLVER, 1)
        async with (
            server as services,
            grpc.aio.insecure_channel(
                services[0].address, options=[("grpc.enable_retries", 0)]
            ) as channel,
        ):
            client = AsyncResolverClient(channel)
            with pytest.raises(UnavailableError):
                await client.get_resolver_policy(timeout=10)
        assert len(servicer.requests) == 1

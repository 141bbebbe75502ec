"""Every RPC of every service (approvals too) has a typed method on both the blocking and
the asyncio client."""

from __future__ import annotations

import inspect
import re

import pytest
from google.protobuf.descriptor import MethodDescriptor

from assay.client import (
    AdjudicationClient,
    ApprovalClient,
    AsyncAdjudicationClient,
    AsyncApprovalClient,
    AsyncPlannerClient,
    AsyncResolverClient,
    PlannerClient,
    ResolverClient,
)
from assay.client._async.base import unary
from assay.client.base import AsyncClient, SyncClient
from assay.v1 import adjudication_service_pb2 as adj

PAIRS: list[tuple[type[SyncClient], type[AsyncClient]]] = [
    (ResolverClient, AsyncResolverClient),
    (PlannerClient, AsyncPlannerClient),
    (AdjudicationClient, AsyncAdjudicationClient),
    (ApprovalClient, AsyncApprovalClient),
]
RPCS = [(sync, aio, rpc) for sync, aio in PAIRS for rpc in sync.SERVICE.methods]


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@pytest.mark.parametrize(
    ("sync", "aio", "rpc"), RPCS, ids=[f"{r.containing_service.name}.{r.name}" for _, _, r in RPCS]
)
class TestEveryRpcHasAMethod:
    def test_both_clients_have_it_with_timeout_and_request_id_options(
        self, sync: type[SyncClient], aio: type[AsyncClient], rpc: MethodDescriptor
    ) -> None:
        """snake_case method on both clients, taking ``timeout`` and ``x_request_id``."""
        for client in (sync, aio):
            method = getattr(client, snake(rpc.name), None)
            assert method is not None, f"{client.__name__} lacks {snake(rpc.name)}"
            parameters = inspect.signature(method).parameters
            assert {"request", "timeout", "x_request_id"} <= parameters.keys()

    def test_async_unary_methods_are_coroutines(
        self, sync: type[SyncClient], aio: type[AsyncClient], rpc: MethodDescriptor
    ) -> None:
        """Unary methods of the asyncio client are awaited; streaming ones are iterated."""
        method = getattr(aio, snake(rpc.name))
        assert inspect.iscoroutinefunction(method) is (not rpc.server_streaming)


class TestRpcPairing:
    def test_a_method_naming_messages_of_another_rpc_fails_at_class_creation(self) -> None:
        """Pairing a request with another RPC's response is refused when the class is made."""
        # Before Python 3.12 an error in __set_name__ arrives wrapped in a RuntimeError.
        with pytest.raises((TypeError, RuntimeError)) as raised:

            class Mispaired(AsyncAdjudicationClient):
                # mypy refuses it too; the check is for code it does not see.
                get_case = unary(adj.GetCaseRequest, adj.GetReviewerResponse)  # type: ignore[assignment]

        error = raised.value.__cause__ or raised.value
        assert "GetCase" in str(error)

    def test_the_class_attribute_is_the_named_coroutine_function(self) -> None:
        """On the class a generated method is a plain function named like the method."""
        method = AsyncAdjudicationClient.get_case
        assert inspect.iscoroutinefunction(method)
        assert method.__qualname__ == "AsyncAdjudicationClient.get_case"

"""The blocking resolver client's ``detail``: what goes on the wire for each spelling."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, cast

import grpc
import pytest
from google.protobuf.message import Message

from assay.client import ResolverClient
from assay.v1 import resolver_service_pb2 as rs
from tests.unit.client.test_client_sync import (
    CLAIM,
    RESOLVER,
    RecordingChannel,
    fake,
    method,
    result,
    succeed,
    take,
)

__all__ = ["fake"]  # the fixture, used by name


class TestDetail:
    @pytest.mark.parametrize(
        ("detail", "expected"),
        [
            (None, rs.RESOLUTION_DETAIL_UNSPECIFIED),
            ("full", rs.RESOLUTION_DETAIL_FULL),
            ("summary", rs.RESOLUTION_DETAIL_SUMMARY),
            (rs.RESOLUTION_DETAIL_SUMMARY, rs.RESOLUTION_DETAIL_SUMMARY),
        ],
    )
    @pytest.mark.parametrize("call", ["resolve", "resolve_all"])
    def test_detail_is_sent(
        self,
        fake: tuple[Any, RecordingChannel, ThreadPoolExecutor],
        call: str,
        detail: Any,
        expected: int,
    ) -> None:
        """``resolve`` and ``resolve_all`` put ``detail`` (a name or a number) in the request."""
        inner, channel, pool = fake
        client = ResolverClient(cast(grpc.Channel, channel))
        future: Future[Any]
        response: Message
        if call == "resolve":
            future = pool.submit(
                client.resolve, [CLAIM], "api:x", "idempotency.mode", detail=detail
            )
            name, response = "ResolveSemantic", rs.ResolveSemanticResponse()
        else:
            future = pool.submit(client.resolve_all, [CLAIM], detail=detail)
            name, response = "ResolveEvidence", rs.ResolveEvidenceResponse()
        _, request, rpc = take(inner, method(RESOLVER, name))
        assert request.detail == expected
        succeed(rpc, response)
        result(future)

    def test_unknown_name_is_refused_before_calling(
        self, fake: tuple[Any, RecordingChannel, ThreadPoolExecutor]
    ) -> None:
        """A misspelt detail raises ValueError here; nothing is sent."""
        _, channel, _ = fake
        client = ResolverClient(cast(grpc.Channel, channel))
        with pytest.raises(ValueError, match="'full' or 'summary'"):
            client.resolve_all([CLAIM], detail=cast(Any, "brief"))
        assert channel.calls == []

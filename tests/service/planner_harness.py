"""Real resolver + planner servers for the planner's service tests.

Both services are the real ones, on 127.0.0.1 port 0, talking over a real
channel; a test can put a wrapper around the resolver's servicer to slow it
down or to watch what the planner sends it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format

from assay.runtime.config import ServerConfig
from assay.runtime.server import RunningService, ServiceSpec, serving
from assay.services.registry import ServeOptions
from assay.services.resolver import service as resolver_service
from assay.v1 import planner_service_pb2 as pb
from assay.v1 import planner_service_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "plan"
# Short drain: a test that leaves a slow call in flight should not wait 10 s to stop.
FAST_STOP = ServerConfig(grace_seconds=0.2)


def example(name: str) -> pb.PlanEvidenceRequest:
    """One of the shipped plan examples, as a request."""
    data = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return json_format.ParseDict(data, pb.PlanEvidenceRequest())


@dataclass
class WatchingResolver:
    """Wraps the real resolver servicer: records calls, can delay them."""

    inner: Any
    delay_seconds: float = 0.0
    calls: list[str] = field(default_factory=list)
    hypotheses_per_call: list[int] = field(default_factory=list)
    # The ResolutionDetail each ResolveHypotheses call asked for.
    details: list[int] = field(default_factory=list)
    time_remaining: list[float | None] = field(default_factory=list)
    request_ids: list[str] = field(default_factory=list)

    async def _watch(self, name: str, context: grpc.aio.ServicerContext) -> None:
        self.calls.append(name)
        self.time_remaining.append(context.time_remaining())
        metadata = dict(context.invocation_metadata() or ())
        self.request_ids.append(str(metadata.get("x-request-id", "")))
        if self.delay_seconds:
            await asyncio.sleep(self.delay_seconds)

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)

        async def method(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await self._watch(name, context)
            if name == "ResolveHypotheses":
                self.hypotheses_per_call.append(len(request.hypotheses))
                self.details.append(request.detail)
            return await target(request, context)

        return method


def resolver_spec(servicer: Any = None) -> ServiceSpec:
    return ServiceSpec(
        name="resolver",
        descriptor=resolver_service.SERVICE_DESCRIPTOR,
        servicer=servicer or resolver_service.make_servicer(),
        port=0,
    )


@asynccontextmanager
async def planner_for(target: str) -> AsyncIterator[pb_grpc.PlannerServiceStub]:
    """A real planner calling the resolver at ``target``, and a stub to call it."""
    from assay.services.planner.service import build_spec

    spec = await build_spec(ServeOptions(port=0, resolver_target=target))
    async with (
        serving([spec], FAST_STOP) as running,
        grpc.aio.insecure_channel(running[0].address) as channel,
    ):
        yield pb_grpc.PlannerServiceStub(channel)


@asynccontextmanager
async def both(
    resolver_servicer: Any = None,
) -> AsyncIterator[tuple[pb_grpc.PlannerServiceStub, RunningService]]:
    """A real resolver (optionally wrapped) and a real planner wired to it."""
    async with (
        serving([resolver_spec(resolver_servicer)], FAST_STOP) as resolvers,
        planner_for(resolvers[0].address) as stub,
    ):
        yield stub, resolvers[0]

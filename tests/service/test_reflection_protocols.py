"""Server reflection under both protocol names, through a real server on a loopback port.

The ``v1`` request is framed by hand from the protocol's field numbers (``list_services`` is
field 7, ``file_containing_symbol`` field 4), as a client generated from
``grpc/reflection/v1/reflection.proto`` would send it, and posted to the ``v1`` method name;
the answer is read with grpcio-reflection's ``v1alpha`` messages, whose fields carry the same
numbers. (grpcio-reflection's own client, ``ProtoReflectionDescriptorDatabase``, speaks only
``v1alpha``; ``tests/external/test_buf_curl.py`` drives a client that speaks only ``v1``.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2 as v1alpha

from assay.runtime.config import ServerConfig
from assay.runtime.reflection import v1_file_descriptor
from assay.runtime.server import serving
from assay.services.registry import SERVICES, ServeOptions

METHODS = {
    "v1": "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "v1alpha": "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
}


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def string_field(number: int, text: str) -> bytes:
    """One length-delimited field, as any protobuf encoder writes it."""
    data = text.encode()
    return varint(number << 3 | 2) + varint(len(data)) + data


LIST_SERVICES = string_field(7, "")


def file_containing(symbol: str) -> bytes:
    return string_field(4, symbol)


def numbering(proto: descriptor_pb2.FileDescriptorProto) -> dict[str, list[tuple[str, int, int]]]:
    """Each message's fields as (name, number, type): what decides the bytes on the wire."""
    return {m.name: [(f.name, f.number, f.type) for f in m.field] for m in proto.message_type}


@pytest.fixture
async def resolver() -> AsyncIterator[str]:
    spec = await SERVICES["resolver"].builder()(ServeOptions(port=0))
    async with serving([spec], ServerConfig(host="127.0.0.1", grace_seconds=1.0)) as running:
        yield running[0].address


async def ask(target: str, version: str, request: bytes) -> v1alpha.ServerReflectionResponse:
    async with grpc.aio.insecure_channel(target) as channel:
        call = channel.stream_stream(
            METHODS[version],
            request_serializer=lambda raw: raw,
            response_deserializer=v1alpha.ServerReflectionResponse.FromString,
        )
        replies = [reply async for reply in call(iter([request]), timeout=10)]
    assert len(replies) == 1
    return replies[0]


class TestReflectionProtocols:
    @pytest.mark.parametrize("version", sorted(METHODS))
    async def test_each_protocol_lists_the_service_and_both_reflections(
        self, resolver: str, version: str
    ) -> None:
        """list_services through either name names the service, health and both protocols."""
        reply = await ask(resolver, version, LIST_SERVICES)
        names = {service.name for service in reply.list_services_response.service}
        assert names == {
            "assay.v1.ResolverService",
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        }

    @pytest.mark.parametrize("version", sorted(METHODS))
    async def test_each_protocol_describes_the_contract(self, resolver: str, version: str) -> None:
        """file_containing_symbol through either name returns the resolver's proto file."""
        reply = await ask(resolver, version, file_containing("assay.v1.ResolverService"))
        files = [
            descriptor_pb2.FileDescriptorProto.FromString(raw)
            for raw in reply.file_descriptor_response.file_descriptor_proto
        ]
        assert "assay/v1/resolver_service.proto" in {f.name for f in files}

    async def test_the_v1_service_describes_itself_in_its_own_package(self, resolver: str) -> None:
        """The v1 name that list shows is described too, with v1alpha's field numbers."""
        reply = await ask(resolver, "v1", file_containing("grpc.reflection.v1.ServerReflection"))
        (raw,) = reply.file_descriptor_response.file_descriptor_proto
        served = descriptor_pb2.FileDescriptorProto.FromString(raw)
        assert served.package == "grpc.reflection.v1"
        assert served == v1_file_descriptor()
        older = descriptor_pb2.FileDescriptorProto()
        v1alpha.DESCRIPTOR.CopyToProto(older)
        assert numbering(served) == numbering(older)
        for message in served.message_type:
            for field in message.field:
                assert not field.type_name or field.type_name.startswith(".grpc.reflection.v1.")

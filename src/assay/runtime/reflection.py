"""Server reflection under both names clients ask for: ``grpc.reflection.v1`` and
``grpc.reflection.v1alpha``.

grpcio-reflection serves only ``v1alpha``, while newer clients ask for ``v1`` (``buf curl``
tries it first), and a client that speaks only ``v1`` finds nothing. The two protocols are
the same messages under two package names: every field has the same number and type, so the
bytes on the wire are identical. So the ``v1`` service here is the library's own ``v1alpha``
servicer behind a second method name, reading and writing the same messages; and so that
``describe`` works for every name ``list`` shows, the ``v1`` file descriptor (the ``v1alpha``
one with its package renamed) is added to the descriptor pool reflection answers from.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection
from grpc_reflection.v1alpha import reflection_pb2 as v1alpha_pb2
from grpc_reflection.v1alpha import reflection_pb2_grpc as v1alpha_grpc

V1ALPHA_SERVICE = reflection.SERVICE_NAME
V1_PACKAGE = "grpc.reflection.v1"
V1_SERVICE = f"{V1_PACKAGE}.ServerReflection"
V1_FILE = "grpc/reflection/v1/reflection.proto"
METHOD = "ServerReflectionInfo"


def v1_file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The ``grpc.reflection.v1`` file: ``v1alpha``'s messages and service, package renamed."""
    proto = descriptor_pb2.FileDescriptorProto()
    v1alpha_pb2.DESCRIPTOR.CopyToProto(proto)
    old = f".{v1alpha_pb2.DESCRIPTOR.package}."
    proto.name = V1_FILE
    proto.package = V1_PACKAGE
    proto.ClearField("options")
    for message in proto.message_type:
        for field in message.field:
            if field.type_name.startswith(old):
                field.type_name = f".{V1_PACKAGE}." + field.type_name[len(old) :]
    for service in proto.service:
        for method in service.method:
            method.input_type = f".{V1_PACKAGE}." + method.input_type[len(old) :]
            method.output_type = f".{V1_PACKAGE}." + method.output_type[len(old) :]
    return proto


def _register_v1_descriptor(pool: descriptor_pool.DescriptorPool) -> None:
    try:
        pool.FindFileByName(V1_FILE)
    except KeyError:
        pool.AddSerializedFile(v1_file_descriptor().SerializeToString())


def enable_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Serve reflection for ``service_names`` (and both reflection services) on ``server``."""
    pool = descriptor_pool.Default()
    _register_v1_descriptor(pool)
    names = (*service_names, V1_SERVICE, V1ALPHA_SERVICE)
    servicer = reflection.aio.ReflectionServicer(names, pool=pool)
    v1alpha_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    v1 = grpc.method_handlers_generic_handler(
        V1_SERVICE,
        {
            METHOD: grpc.stream_stream_rpc_method_handler(
                servicer.ServerReflectionInfo,
                request_deserializer=v1alpha_pb2.ServerReflectionRequest.FromString,
                response_serializer=v1alpha_pb2.ServerReflectionResponse.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((v1,))

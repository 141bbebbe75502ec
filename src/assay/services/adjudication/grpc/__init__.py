"""The gRPC adapter: protobuf in, domain values to a use case, protobuf out.

``values`` holds the field-level conversions (timestamps, enums, digests), ``convert`` the
messages, ``servicer`` the RPC methods. Nothing below this package sees protobuf.
"""

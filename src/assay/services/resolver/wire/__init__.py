"""The resolver's messages: claims read from protobuf into the domain's rows (``reader``,
``intake``), and resolutions written back (``convert``).

These modules know protobuf but not gRPC: they translate, they never call.
"""

"""The resolver's messages: each request read into its ask (``asks``, through ``reader``
and the hot ``intake`` loop), and each answer written back (``answers``, ``convert``).

These modules know protobuf but not gRPC: they translate, they never call.
"""

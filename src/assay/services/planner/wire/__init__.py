"""The planner's messages: requests read into domain values, and the resolver's requests
and the plan's response built, as protobuf or as bytes spliced without a re-serialization.

These modules know protobuf but not gRPC: they translate, they never call.
"""

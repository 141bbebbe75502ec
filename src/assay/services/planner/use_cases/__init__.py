"""What the planner's RPC does (``plan_evidence``), reaching the resolver through ports and
never a gRPC channel or context.
"""

"""The planner's edges: the gRPC servicer callers reach, the channel to the resolver, the
resolver's reliability table as fetched, the operator's probe file and page tokens.
"""

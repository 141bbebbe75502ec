"""The resolver's edges: the gRPC servicer callers reach, and the worker pool that runs
heavy work off the event loop and stops it once the caller is gone (``offload``).
"""

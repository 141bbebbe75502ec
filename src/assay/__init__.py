"""Assay: an evidence-intelligence backend of three gRPC services sharing one contract."""

__version__ = "0.1.0"

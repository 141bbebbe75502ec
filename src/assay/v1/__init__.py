"""Generated protobuf and gRPC code for assay.v1 (do not edit)."""

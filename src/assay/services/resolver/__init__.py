"""The resolver: claim-scoped evidence fused per semantic (DESIGN §2), served over gRPC."""

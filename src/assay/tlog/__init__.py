"""The transparency log's verifiable parts, shared by the server and by auditors' tools.

``merkle`` is the RFC 6962 tree and its proof verifiers; ``checkpoint`` the C2SP
signed-note checkpoints. Neither touches gRPC, storage or the server: the adjudication
service builds its log with them, and ``assay audit`` verifies what it is given with the
same code, offline if need be.
"""

"""What every Assay client does on every call, sync or async (the clients' bases).

- a timeout on every call, the client's default overridable per call, never none;
- ``x-request-id`` metadata when the caller gives one;
- a fresh ``request_id`` in a mutating request given none, so retries are safe;
- every ``grpc.RpcError`` re-raised as the matching ``AssayCallError`` subclass.

The shared part lives in ``assay.client.calls``; ``AsyncClient`` in
``assay.client._async.base``, and ``SyncClient`` is generated from it
(tools/gen_sync_client.py). This module keeps the names where callers import them.
"""

from __future__ import annotations

from assay.client._async.base import AsyncClient
from assay.client._sync.base import SyncClient
from assay.client.calls import (
    REQUEST_ID_HEADER,
    Metadata,
    call_metadata,
    new_request_id,
    with_request_id,
)
from assay.client.credentials import Credentials
from assay.client.errors import AssayCallError

__all__ = [
    "REQUEST_ID_HEADER",
    "AssayCallError",
    "AsyncClient",
    "Credentials",
    "Metadata",
    "SyncClient",
    "call_metadata",
    "new_request_id",
    "with_request_id",
]

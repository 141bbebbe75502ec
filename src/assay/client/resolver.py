"""Clients for the Resolver: ``ResolverClient`` (blocking) and ``AsyncResolverClient``.

Written once, in ``assay.client._async.resolver`` (read it for the methods);
the blocking client is generated from it (tools/gen_sync_client.py). This module
keeps both where callers import them.
"""

from __future__ import annotations

from assay.client._async.resolver import SERVICE, AsyncResolverClient
from assay.client._sync.resolver import ResolverClient
from assay.client.detail import Detail

__all__ = ["SERVICE", "AsyncResolverClient", "Detail", "ResolverClient"]

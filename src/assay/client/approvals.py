"""Clients for approvals: ``ApprovalClient`` (blocking) and ``AsyncApprovalClient``.

Written once, in ``assay.client._async.approvals`` (read it for the flow and the
methods); the blocking client is generated from it (tools/gen_sync_client.py). This
module keeps both where callers import them. ``ApprovalService`` is served by the
adjudication process: give either client the adjudication service's address.
"""

from __future__ import annotations

from assay.client._async.approvals import SERVICE, AsyncApprovalClient
from assay.client._sync.approvals import ApprovalClient

__all__ = ["SERVICE", "ApprovalClient", "AsyncApprovalClient"]

"""Blocking client for Adjudication: every RPC, plus the review workflow in plain values.

Generated (tools/gen_sync_client.py) from the asyncio client,
``assay.client._async.adjudication``, which documents the workflow; this module
keeps ``AdjudicationClient`` where callers import it.
"""

from __future__ import annotations

from assay.client._sync.adjudication import SERVICE, AdjudicationClient

__all__ = ["SERVICE", "AdjudicationClient"]

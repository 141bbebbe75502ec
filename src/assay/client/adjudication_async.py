"""Asyncio client for Adjudication: every RPC, plus the review workflow in plain values.

Written in ``assay.client._async.adjudication`` (the source the blocking
``AdjudicationClient`` is generated from); this module keeps
``AsyncAdjudicationClient`` where callers import it.
"""

from __future__ import annotations

from assay.client._async.adjudication import SERVICE, AsyncAdjudicationClient

__all__ = ["SERVICE", "AsyncAdjudicationClient"]

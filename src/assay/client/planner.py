"""Clients for the Planner: ``PlannerClient`` (blocking) and ``AsyncPlannerClient``.

Written once, in ``assay.client._async.planner`` (read it for the methods); the
blocking client is generated from it (tools/gen_sync_client.py). This module keeps
both where callers import them.
"""

from __future__ import annotations

from assay.client._async.planner import SERVICE, AsyncPlannerClient
from assay.client._sync.planner import PlannerClient

__all__ = ["SERVICE", "AsyncPlannerClient", "PlannerClient"]

"""Which acquisition waits for its effect to show, and writing each one's line.

An acquisition's effect on the decision shows in the first resolution made with its claims,
and the loop makes that resolution anyway (the next iteration's, or the final one). So the
``Recorder`` holds the acquisition, the discrimination the plan predicted for it and the
decision before it until ``after`` is given that resolution, then appends its line
(``observations``). A gold label collected with ``--case`` is judged the same way, against
the prediction its enqueue recorded; seeing the decision without it takes the one resolver
call recording adds. Without an observations file the recorder records nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from assay.executor import observations
from assay.executor.choice import short_name
from assay.executor.model import Acquisition
from assay.v1 import claim_pb2, plan_pb2, resolution_pb2

Resolve = Callable[[claim_pb2.Evidence], Awaitable[resolution_pb2.SemanticResolution]]


def decision(resolution: resolution_pb2.SemanticResolution) -> observations.Decision:
    """What an acquisition may change: the status and the leading value."""
    status = short_name(resolution_pb2.ResolutionStatus, resolution.status, "RESOLUTION_STATUS_")
    return observations.Decision(status, resolution.leader.value_key)


def predicted_name(candidate: plan_pb2.AcquisitionCandidate) -> str:
    """The candidate's discrimination as the file writes it (HIGH, MEDIUM, LOW; "" unset)."""
    if not candidate.discrimination:
        return ""
    return short_name(plan_pb2.Discrimination, candidate.discrimination, "DISCRIMINATION_")


class Recorder:
    """Appends one line per acquisition to ``path`` (nothing when None)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.waiting: tuple[Acquisition, str, observations.Decision] | None = None

    async def start(self) -> None:
        """Create the file owner-only, or refuse one others may write (ValueError)."""
        self.waiting = None
        if self.path is not None:
            await asyncio.to_thread(observations.check, self.path)

    def acted(
        self,
        acquisition: Acquisition,
        candidate: plan_pb2.AcquisitionCandidate,
        before: resolution_pb2.SemanticResolution,
    ) -> None:
        """An acquisition from a plan, to be recorded with the next resolution."""
        self.waiting = (acquisition, predicted_name(candidate), decision(before))

    async def after(self, resolution: resolution_pb2.SemanticResolution) -> None:
        """Record the acquisition waiting for this resolution, if any."""
        if self.waiting is None:
            return
        acquisition, predicted, before = self.waiting
        self.waiting = None
        await self.write(observations.record(acquisition, predicted, before, decision(resolution)))

    async def write(self, line: str) -> None:
        if self.path is not None:
            await asyncio.to_thread(observations.append, self.path, line)

    async def collected(
        self,
        resolve: Resolve,
        working: claim_pb2.Evidence,
        fresh: Sequence[tuple[Acquisition, Sequence[claim_pb2.Claim]]],
    ) -> None:
        """Add the gold claims new to ``working``. Recording, with exactly one new label,
        ``working`` is resolved without it first, so the next resolution shows its effect;
        with several, no one label's effect can be told apart, so none is judged."""
        if self.path is not None and len(fresh) == 1:
            acquisition = fresh[0][0]
            before = await resolve(working)
            predicted = await asyncio.to_thread(
                observations.predicted_for, self.path, acquisition.case_id
            )
            self.waiting = (acquisition, predicted, decision(before))
        else:
            for acquisition, _ in fresh:
                await self.write(observations.record(acquisition))
        for _, claims in fresh:
            working.claims.extend(claims)

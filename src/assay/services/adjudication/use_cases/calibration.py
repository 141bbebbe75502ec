"""CalibrateReliability: the gold labels of the caller's tenants, read in one checked
snapshot (the export's), turned into observations and estimated against the declared
table, with the proposal the figures support at the checkpoint read at."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from assay import optional
from assay.errors import Violations
from assay.services.adjudication.domain import calibration_inputs
from assay.services.adjudication.domain.calibration import (
    DEFAULT_MIN_COUNT,
    CalibrationOptions,
    Observation,
    calibrate,
)
from assay.services.adjudication.domain.calibration_proposal import (
    Checkpoint,
    propose,
    render_proposal,
)
from assay.services.adjudication.domain.calibration_result import Calibrated
from assay.services.adjudication.domain.model import Caller, ChainHead
from assay.services.adjudication.storage.interface import ApprovalBatch, ExportBatch
from assay.services.adjudication.use_cases.lookups import Lookups

# Records per snapshot batch (the export's largest).
BATCH = 5000


async def calibrate_reliability(
    lookups: Lookups,
    tenant: str,
    declared: Mapping[str, float],
    include_synthetic: bool,
    min_count: int,
    tree_size: int,
    caller: Caller,
    root_of: Callable[[int], Awaitable[bytes]],
) -> Calibrated:
    """The report and proposal; ``root_of(size)``: the ledger's root hash at a tree size."""
    problems = Violations()
    if min_count < 0:
        problems.add("min_count", "must not be negative (0 means the default)")
    if tree_size < 0:
        problems.add("tree_size", "must not be negative (0 means the current size)")
    if not declared:
        problems.add("declared", "the table in use is required (GetResolverPolicy's)")
    problems.raise_if_any()
    optional.require("scipy", "CalibrateReliability")  # the Beta posterior's quantiles
    options = CalibrationOptions(include_synthetic, min_count or DEFAULT_MIN_COUNT)
    left = calibration_inputs.LeftOut()
    found: list[Observation] = []
    size = 0
    async for item in lookups.export(tenant, BATCH, caller):
        if isinstance(item, ChainHead):
            if tree_size > item.sequence:
                problems.add("tree_size", f"is past the ledger's {item.sequence} events")
                problems.raise_if_any()
            size = tree_size or item.sequence
        elif isinstance(item, ExportBatch):
            found.extend(calibration_inputs.observations(item.records, size, declared, left))
        elif isinstance(item, ApprovalBatch):  # never asked for
            continue
    report = calibrate(found, declared, options)
    root = await root_of(size)
    proposal = propose(report, Checkpoint(size, root.hex()))
    return Calibrated(report, proposal, render_proposal(proposal), left, root)

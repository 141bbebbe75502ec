"""ResolveEvidence over the columnar engine: large per-claim evidence, resolved in bulk.

Above ``MIN_CLAIMS`` claims (``MIN_CLAIMS_FULL`` at FULL detail) the per-claim form's
evidence is read column-wise (``from_claims``), resolved by the columnar engine and
answered with the very messages the per-claim path builds, encoded column-wise and
parsed once (``to_resolutions``, ``claim_tails``); below it, building columns costs
more than it saves. Evidence the bridge does not take (None: anything invalid or unusual)
goes down the per-claim path, which answers it as before, errors included. A
differential property test holds the two answers byte-equal at both details.
"""

from __future__ import annotations

from collections.abc import Callable

from assay.services.resolver.columnar.engine import resolve_table
from assay.services.resolver.columnar.from_claims import read_claims
from assay.services.resolver.columnar.to_resolutions import fill_evidence
from assay.services.resolver.domain.model import Staleness
from assay.services.resolver.domain.policy import Policy
from assay.services.resolver.wire.convert import ClaimIndex, Emitter
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as pb

# Measured with bench/peers.py: below this many claims the per-claim path is as fast.
MIN_CLAIMS = 4096
# At FULL detail, where the per-claim path fills a ClaimWeight per claim, the bridge is
# ~15% slower at 4,096 claims, as fast at 8,192, ~7% faster at 16,384 and ~20% at
# 100,000 (CPU time in one process, bridge and per-claim path interleaved).
MIN_CLAIMS_FULL = 8192


def _carry_on() -> None:
    """The ``check`` of work nobody can stop half-way."""


def resolve_evidence(
    evidence: claim_pb2.Evidence,
    policy: Policy,
    staleness: Staleness | None,
    full: bool,
    check: Callable[[], None] = _carry_on,
) -> pb.ResolveEvidenceResponse | None:
    """ResolveEvidence's response for valid ``evidence``; None to take the per-claim path."""
    bridged = read_claims(evidence, policy.reliability)
    if bridged is None:
        return None
    check()
    horizon = None if staleness is None else staleness.horizon
    resolved = resolve_table(
        bridged.columns, policy, horizon, refs=bridged.refs, full=full, check=check
    )
    check()
    response = pb.ResolveEvidenceResponse()
    fill_evidence(bridged, resolved, Emitter(ClaimIndex()), response, full)
    return response

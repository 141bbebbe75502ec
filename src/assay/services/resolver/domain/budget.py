"""What one request may cost the resolver: a cap on the claim resolutions it asks for.

Most of the resolver's work grows with the request: each claim is read once and weighed
in one resolution, and the response echoes it a bounded number of times (ResolveEvidence
and ResolveSemantic answer with about twice their request for typical claims). Two RPCs
multiply instead. ResolveHypotheses resolves the target once per hypothesis, and
Reconcile a semantic before and after each proposal, each time with every claim about
it: a 1 MiB request of 25,000 claims and 1,024 empty hypotheses asked for 25 million
claim resolutions and a 4 GB response, and the process peaked at 15.7 GB before gRPC
refused to send it.

So a request may ask for at most ``MAX_CLAIM_RESOLUTIONS`` claim resolutions (one claim
weighed in one resolution): ResolveHypotheses is charged (hypotheses + 1) x the claims
about the target, plus the hypotheses' own claims; Reconcile, for each proposal, one
plus the claims about every semantic it is judged on. ``charge`` refuses more with
INVALID_ARGUMENT, ERROR_REASON_REQUEST_TOO_EXPENSIVE, before any of that work starts.
Every response is also held to ``assay.runtime.budget`` (100 times its request, within
the message limit), which is what bounds a FULL-detail response well before this cap.
"""

from __future__ import annotations

from assay.errors import FieldViolation, InvalidArgument, Reason

# Two million cost about 0.5-2 s of CPU at summary detail, and admit the planner's largest
# call (100,000 claims about its target, 14 hypotheses).
MAX_CLAIM_RESOLUTIONS = 2_000_000


def charge(resolutions: int, field: str, description: str) -> None:
    """Refuse a request asking for more than ``MAX_CLAIM_RESOLUTIONS`` (module docstring).

    ``description`` says how ``resolutions`` was counted, for the caller to act on."""
    if resolutions <= MAX_CLAIM_RESOLUTIONS:
        return
    why = (
        f"{description} = {resolutions:,} claim resolutions; "
        f"at most {MAX_CLAIM_RESOLUTIONS:,} per request: split it"
    )
    raise InvalidArgument(
        Reason.REQUEST_TOO_EXPENSIVE,
        f"{field}: {why}",
        [FieldViolation(field, why)],
        {"limit": str(MAX_CLAIM_RESOLUTIONS), "requested": str(resolutions)},
    )

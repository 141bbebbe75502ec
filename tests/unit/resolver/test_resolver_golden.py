"""Small requests answer with exactly the bytes they answered with before the per-call tuning.

The 10-claim path was made cheaper by reading, fusing and emitting
differently, never by answering differently. This pins that down: a few thousand
generated small requests -- valid and invalid, every value kind, relations, reviews,
stated reliabilities, correlation groups, staleness, both details -- go through
``ResolveSemantic`` and ``ResolveEvidence`` as served in-process, and the SHA-256 of
every response's deterministic bytes (or error's reason, message and violations) must
equal the digest recorded from the code before the change. A deliberate change of an
answer changes the digest: record the new one in the same commit that explains why.

Each resolution's ``reliability_table_digest`` came after the recording: it is checked
to name the table used, then cleared, so the rest of every answer stays pinned.
"""

from __future__ import annotations

import hashlib
import random
from functools import partial
from typing import Any

from assay import errors
from assay.services.resolver.adapters.servicer import ResolverServicer
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as pb
from tests.unit.resolver.resolver_factories import claim

REQUESTS = 1500
SUBJECTS = ("api:a", "api:b")
PREDICATES = ("http.method", "idempotency.mode")
SOURCES = tuple(sorted(DEFAULT_POLICY.reliability))
VALUES: tuple[Any, ...] = (
    "POST",
    "PUT",
    "key",
    "",
    60,
    120.5,
    True,
    False,
    {"k": 1, "j": [1, 2]},
    {"j": [1, 2], "k": 1.0},
    [1, "a"],
)
# One way each to make a claim invalid (a quarter of the requests get one).
BREAKS: tuple[dict[str, Any], ...] = (
    {"source": "unknown_kind"},
    {"subject": ""},
    {"confidence": 1.5},
    {"reliability": 1.2},
    {"status": 5},
    {"data": None},
    {"data": float("nan")},
    {"relation": (4, "c0")},
    {"relation": (0, "c0")},
    {"relation": (3, "")},
    {"id": "", "relation": (3, "c0")},
    {"observed": -62_135_596_801},
)
# Recorded from 7ae22a3 (before the per-call tuning of ResolveSemantic).
SEMANTIC_DIGEST = "0114841dbc8bc114062f7c1ed779198f13e2d1fcbff0e2be21de579430d0333e"
EVIDENCE_DIGEST = "c4700a83adf7c0b96db64173be3ca3fa96f6f4e4e3a5d85d5d9c0024da1eef26"


def _claims(rng: random.Random) -> list[claim_pb2.Claim]:
    size = rng.randrange(0, 14)
    broken = rng.randrange(size) if size and rng.random() < 0.25 else -1
    out = []
    for i in range(size):
        has_id = rng.random() < 0.85
        fields: dict[str, Any] = {
            "data": rng.choice(VALUES),
            "id": f"c{i}" if has_id else "",
            "subject": rng.choice(SUBJECTS),
            "predicate": rng.choice(PREDICATES),
            "source": rng.choice(SOURCES),
            "source_ref": f"ref{rng.randrange(3)}" if rng.random() < 0.7 else "",
            "confidence": rng.choice((0.0, 0.3, 0.5, 0.71, 0.8, 0.9, 1.0)),
            "reliability": rng.choice((None, None, None, 0.2, 0.5, 0.95, 1.0)),
            "group": rng.choice((None, None, None, "g1", "g2")),
            "status": rng.choice((0, 0, 0, 0, 0, 1, 2, 3)),
            "observed": rng.choice((None, 1_760_000_000, 1_760_500_000, 1_761_000_000)),
        }
        if has_id and size > 1 and rng.random() < 0.15:
            target = rng.choice([f"c{j}" for j in range(size)] + ["ghost"])
            fields["relation"] = (rng.choice((1, 2, 3, 3)), target)
        if i == broken:
            fields.update(rng.choice(BREAKS))
        out.append(claim(fields.pop("data"), **fields))
    if out and rng.random() < 0.03:  # a duplicate id
        out.append(claim("POST", id=out[0].id or "c0", subject=SUBJECTS[0]))
    return out


def _time_fields(rng: random.Random, request: Any) -> None:
    if rng.random() < 0.3:  # both or (rarely) one: each needs the other
        request.as_of.seconds = rng.choice((1_760_600_000, 1_761_000_000, 1_760_800_000))
        request.stale_after.seconds = rng.choice((100_000, 500_000, 800_000))
        if rng.random() < 0.03:
            request.ClearField(rng.choice(("as_of", "stale_after")))
        elif rng.random() < 0.03:
            request.stale_after.seconds = -1
    request.detail = rng.choice((0, 0, 1, 2, 9 if rng.random() < 0.02 else 2))


def _answer(call: Any) -> bytes:
    try:
        response = call()
    except errors.InvalidArgument as error:
        said = [error.reason.name, error.message, str(error.more_violations)]
        said += [f"{v.field}|{v.description}" for v in error.violations]
        return "\n".join(said).encode()
    resolutions = (
        [response.resolution]
        if isinstance(response, pb.ResolveSemanticResponse)
        else list(response.resolutions)
    )
    for resolution in resolutions:
        assert resolution.reliability_table_digest == DEFAULT_POLICY.digest
        resolution.ClearField("reliability_table_digest")
    data: bytes = response.SerializeToString(deterministic=True)
    return data


def _digests(seed: int = 15) -> tuple[str, str]:
    rng = random.Random(seed)
    servicer = ResolverServicer(DEFAULT_POLICY)
    semantic, evidence = hashlib.sha256(), hashlib.sha256()
    for _ in range(REQUESTS):
        claims = _claims(rng)
        one = pb.ResolveSemanticRequest(
            subject=rng.choice(SUBJECTS), predicate=rng.choice(PREDICATES)
        )
        one.evidence.claims.extend(claims)
        _time_fields(rng, one)
        semantic.update(_answer(partial(_run, servicer.ResolveSemantic, one)))
        many = pb.ResolveEvidenceRequest()
        many.evidence.claims.extend(claims)
        _time_fields(rng, many)
        evidence.update(_answer(partial(_run, servicer.ResolveEvidence, many)))
    return semantic.hexdigest(), evidence.hexdigest()


def _run(method: Any, request: Any) -> Any:
    """``method`` called in-process, its coroutine run to its end without a loop (the
    resolver never waits)."""
    try:
        method(request, None).send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("an in-process resolver call suspended")


class TestSmallRequestsGolden:
    def test_responses_are_byte_identical_to_the_recorded_ones(self) -> None:
        """Every generated small request answers with the recorded bytes, response or error."""
        assert _digests() == (SEMANTIC_DIGEST, EVIDENCE_DIGEST)


if __name__ == "__main__":
    print(*_digests())

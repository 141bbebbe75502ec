"""Reads one request's claim lists into intakes, collecting every violation on the way.

A request can carry several claim lists (the base evidence, each hypothesis,
each proposal), and ids must be unique within "base + that list". The reader
runs the fast intake on each list and, only when a list fails it, the slow
validation, so that a bad request is answered with every problem of every
list in one ``InvalidArgument`` and a good one never pays for explanations.
Once ``MAX_VIOLATIONS`` are found, further failing lists are only noted, not
explained, so a request of a thousand bad hypotheses costs a bounded error.

Reading a million claims takes seconds, so a long list is handed to the intake in
chunks of ``CHECK_EVERY_CLAIMS`` with the reader's ``check`` called between them: work
whose caller is gone stops within a chunk (see ``offload``), at no measurable cost to
the intake's loop (the chunks are ``islice``s of one iterator).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import chain, islice
from typing import overload

from assay.services.resolver.domain.model import INDEX, Intake, Staleness
from assay.services.resolver.domain.policy import Policy
from assay.services.resolver.domain.validation import (
    MAX_VIOLATIONS,
    Violation,
    check_semantic,
    check_staleness,
    check_times,
    raise_if_any,
)
from assay.services.resolver.wire.convert import ClaimIndex, ClaimList, seconds_of, violations
from assay.services.resolver.wire.intake import SourceTable, intake
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as pb

# The requests that may ask for staleness (``as_of``, ``stale_after``).
Timed = (
    pb.ResolveSemanticRequest
    | pb.ResolveEvidenceRequest
    | pb.ResolveHypothesesRequest
    | pb.ResolveColumnsRequest
)

# Claims the intake reads between two calls of the reader's ``check``.
CHECK_EVERY_CLAIMS = 8192


def _carry_on() -> None:
    """The ``check`` of a reader whose work nobody can stop half-way."""


class _Checked(Sequence[claim_pb2.Claim]):
    """A claim list that calls ``check`` before each chunk it yields when iterated."""

    def __init__(self, claims: ClaimList, check: Callable[[], None]) -> None:
        self._claims = claims
        self._check = check

    def __len__(self) -> int:
        return len(self._claims)

    @overload
    def __getitem__(self, index: int) -> claim_pb2.Claim: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[claim_pb2.Claim]: ...
    def __getitem__(self, index: int | slice) -> claim_pb2.Claim | Sequence[claim_pb2.Claim]:
        return self._claims[index]

    def __iter__(self) -> Iterator[claim_pb2.Claim]:
        return chain.from_iterable(self._chunks())

    def _chunks(self) -> Iterator[Iterator[claim_pb2.Claim]]:
        claims = iter(self._claims)
        for _ in range(0, len(self._claims), CHECK_EVERY_CLAIMS):
            self._check()
            yield islice(claims, CHECK_EVERY_CLAIMS)


class Reader:
    """Intakes for the lists of one request, and the violations found in them."""

    def __init__(
        self, policy: Policy, sources: SourceTable, check: Callable[[], None] = _carry_on
    ) -> None:
        """``sources`` is ``source_table(policy.reliability)``, built once per servicer;
        ``check`` may raise to abandon the reading (its caller is gone)."""
        self.table: Mapping[str, float] = policy.reliability
        self.sources = sources
        self.check = check
        self.index = ClaimIndex()
        self.problems: list[Violation] = []
        self._base_paths: dict[str, str] | None = None
        self._base: Intake | None = None
        self._base_path = ""
        self._base_start = 0
        self._failed = False
        # Observe times by request-wide index, recorded by the intake once staleness is asked.
        self._times: list[float | None] | None = None

    def semantic(self, subject: str, predicate: str) -> None:
        self.problems.extend(check_semantic(subject, predicate))

    def staleness(self, request: Timed) -> Staleness | None:
        """The staleness horizon (seconds since the epoch), when both fields are given.

        Read before the claims: the intake then records each claim's observe time (seconds
        since the epoch, None when absent) by its request-wide index, for ``Staleness``."""
        assert not self.index.size, "staleness is read before the claims"
        as_of = request.as_of if request.HasField("as_of") else None
        after = request.stale_after if request.HasField("stale_after") else None
        found = check_times(
            None if as_of is None else (as_of.seconds, as_of.nanos),
            None if after is None else (after.seconds, after.nanos),
        )
        if not found:
            found = check_staleness(
                as_of is not None, after is not None, 0.0 if after is None else seconds_of(after)
            )
        self.problems.extend(found)
        if found or as_of is None or after is None:
            return None
        times = self._times = []
        return Staleness(seconds_of(as_of) - seconds_of(after), times.__getitem__)

    def base(self, claims: ClaimList, path: str) -> Intake | None:
        """The base evidence; None (with violations recorded) if it is invalid."""
        start = self.index.add(claims)
        got = intake(self._checked(claims), self.sources, start, times=self._times_from(start))
        self._base, self._base_path, self._base_start = got, path, start
        if got is None:
            seen: dict[str, str] = {}
            self._fail(violations(claims, path, self.table, seen))
            self._base_paths = seen
        return got

    def extra(self, claims: ClaimList, path: str, offset: int = 0) -> Intake | None:
        """A list added to the base (a hypothesis, a proposal): ids unique across both.

        Violations are reported at ``{path}[offset + i]``.
        """
        start = self.index.add(claims)
        base = self._base
        known = base.ids if base is not None else None
        got = intake(self._checked(claims), self.sources, start, known, self._times_from(start))
        if got is None or base is None:
            if len(self.problems) >= MAX_VIOLATIONS:
                # Enough is explained already (the error's count then says "at least").
                self._fail([], got is None)
            else:
                seen = dict(self._paths_of_base())
                self._fail(violations(claims, path, self.table, seen, offset), got is None)
        return got

    def _checked(self, claims: ClaimList) -> ClaimList:
        """``claims`` as the intake should read them: checked between chunks if long."""
        if len(claims) <= CHECK_EVERY_CLAIMS or self.check is _carry_on:
            return claims
        return _Checked(claims, self.check)

    def _times_from(self, start: int) -> list[float | None] | None:
        """The list the intake appends observe times to, holding exactly the ``start`` before
        (a list the intake gave up on part-way is invalid: its times are never read)."""
        times = self._times
        if times is not None and len(times) != start:
            del times[start:]
            times.extend([None] * (start - len(times)))
        return times

    def done(self) -> None:
        """Raise one InvalidArgument for everything found so far, if anything was."""
        if self._failed and not self.problems:
            raise RuntimeError("intake rejected a claim that validation accepts")
        raise_if_any(self.problems, self.table)

    def _fail(self, found: list[Violation], failed: bool = True) -> None:
        self._failed = self._failed or failed
        self.problems.extend(found)

    def _paths_of_base(self) -> dict[str, str]:
        if self._base_paths is None:
            base = self._base
            assert base is not None
            self._base_paths = {
                claim_id: f"{self._base_path}[{row[INDEX] - self._base_start}]"
                for claim_id, row in base.ids.items()
            }
        return self._base_paths

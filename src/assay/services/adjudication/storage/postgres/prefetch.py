"""Reading a batch's request ids and cases in two statements instead of two per job.

A review's job reads whether its request id was answered already (``recall``) and the case
it reviews (``snapshot``) before it writes; read job by job, each is a round trip, and round
trips are most of a batch's time. So before the jobs run, the writer *probes* them
(``probe``) for the keys they will read and reads those in one statement per kind
(``fetch``), up to ``ROUNDS`` times. A probe writes nothing and its result is dropped: jobs
are functions of their transaction (the writer already runs a batch twice when a job fails).

The jobs then run for real, in order, their ``recall`` and ``snapshot`` answered from what
was fetched, unless a job earlier in the batch wrote rows under that key
(``BatchState.dirty``): then they read through, and see it. Nothing else changes the fetched
rows meanwhile: the batch holds the chain lock (``writer``), so no other replica writes until
it commits, and anything that writes more broadly than one key (deletes, bulk inserts) turns
the fetched data off for the rest of the batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import asyncpg

from assay.services.adjudication.domain.model import CaseSnapshot, Reviewer
from assay.services.adjudication.storage.interface import StoredResponse
from assay.services.adjudication.storage.postgres import queries

# What a probe stopped at: ("request", issuer, subject, request id) or ("case", case id).
Key = tuple[str, ...]
# How many times jobs are probed: a review's request id and case are found in the first,
# and probing again would run most of each job a second time (measured: ~20% of one
# replica's SubmitReview rate) to find nothing more.
ROUNDS = 1

RECALLS = (
    "SELECT caller_issuer, caller_subject, request_id, method, request_digest, response "
    "FROM idempotency WHERE (caller_issuer, caller_subject, request_id) IN "
    "(SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))"
)


class Stop(BaseException):
    """Raised in a probed job where it would read something not fetched yet, or write."""


def stored_response(record: asyncpg.Record | None) -> StoredResponse | None:
    if record is None:
        return None
    return StoredResponse(record["method"], record["request_digest"], bytes(record["response"]))


class ProbeTx:
    """A ``WriteTx`` that answers reads from ``answers`` and records the first other read."""

    def __init__(self, answers: Mapping[Key, Any], known: Mapping[str, Reviewer]) -> None:
        self._answers = answers
        self._known = known
        self.wanted: list[Key] = []

    def _answer(self, key: Key) -> Any:
        if key in self._answers:
            return self._answers[key]
        self.wanted.append(key)
        raise Stop

    def recall(self, owner: tuple[str, str], request_id: str) -> StoredResponse | None:
        """A request id not fetched yet is taken for new (as almost all are), so the probe
        goes on to the case in the same round; a retry's case is fetched needlessly."""
        key = ("request", *owner, request_id)
        if key in self._answers:
            return stored_response(self._answers[key])
        self.wanted.append(key)
        return None

    def snapshot(self, case_id: str) -> CaseSnapshot | None:
        return queries.snapshot_of(self._answer(("case", case_id)))

    def reviewer(self, reviewer_id: str) -> Reviewer | None:
        if reviewer_id in self._known:
            return self._known[reviewer_id]
        raise Stop

    def remember_snapshot(self, value: CaseSnapshot) -> None:
        """Nothing to remember, as on the real transaction."""

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def stop(*args: Any, **kwargs: Any) -> Any:
            raise Stop

        return stop


def probe(
    jobs: Iterable[Callable[[Any], Any]],
    answers: Mapping[Key, Any],
    known: Mapping[str, Reviewer],
) -> list[Key]:
    """The keys the ``jobs`` read next, given ``answers`` (each job's result is dropped).

    Each job runs on a ``ProbeTx`` that records what it reads (taking a request id it has
    not fetched for new) and stops it at the first case not fetched (``Stop``, a
    ``BaseException``, so a job's ``except Exception`` does not swallow it)."""
    wanted: list[Key] = []
    for job in jobs:
        tx = ProbeTx(answers, known)
        try:
            job(tx)
        except Stop:
            pass
        except Exception:  # the real run meets the error again, or not: either is right
            pass
        wanted += tx.wanted
    return wanted


async def fetch(db: queries.Db, keys: Iterable[Key]) -> dict[Key, Any]:
    """The rows under ``keys``, in one statement per kind; a key with none maps to None."""
    keys = set(keys)
    found: dict[Key, Any] = dict.fromkeys(keys)
    requests = [k for k in keys if k[0] == "request"]
    cases = sorted(k[1] for k in keys if k[0] == "case")
    if requests:
        columns = [[key[i] for key in requests] for i in (1, 2, 3)]
        for record in await db.fetch(RECALLS, *columns):
            key = ("request", record["caller_issuer"], record["caller_subject"])
            found[(*key, record["request_id"])] = record
    if cases:
        for record in await db.fetch(queries.SNAPSHOTS, cases):
            found[("case", record["case_id"])] = record
    return found

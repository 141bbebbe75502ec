"""The domain's error vocabulary, free of gRPC.

Domain code raises these; the runtime maps each class (along its hierarchy) to
a gRPC status code and turns it into a ``google.rpc.Status`` with
``ErrorInfo(reason, domain)`` and, for bad input, ``BadRequest`` field
violations. ``Reason`` mirrors the contract's ``ErrorReason`` enum name for
name; a contract test keeps the two identical.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

ERROR_DOMAIN = "assay.v1"


class Reason(StrEnum):
    """Every ``ErrorInfo.reason`` a service may send (the contract's ``ErrorReason``)."""

    MALFORMED_REQUEST = "ERROR_REASON_MALFORMED_REQUEST"
    INVALID_FIELD = "ERROR_REASON_INVALID_FIELD"
    INTERNAL = "ERROR_REASON_INTERNAL"
    SHUTTING_DOWN = "ERROR_REASON_SHUTTING_DOWN"
    INVALID_PAGE_TOKEN = "ERROR_REASON_INVALID_PAGE_TOKEN"
    REQUEST_ID_REUSED = "ERROR_REASON_REQUEST_ID_REUSED"
    CREDENTIALS_MISSING = "ERROR_REASON_CREDENTIALS_MISSING"
    CREDENTIALS_INVALID = "ERROR_REASON_CREDENTIALS_INVALID"
    CREDENTIALS_EXPIRED = "ERROR_REASON_CREDENTIALS_EXPIRED"
    ROLE_REQUIRED = "ERROR_REASON_ROLE_REQUIRED"
    IDENTITY_MISMATCH = "ERROR_REASON_IDENTITY_MISMATCH"
    TENANT_NOT_PERMITTED = "ERROR_REASON_TENANT_NOT_PERMITTED"
    REQUEST_TOO_EXPENSIVE = "ERROR_REASON_REQUEST_TOO_EXPENSIVE"
    RESPONSE_TOO_LARGE = "ERROR_REASON_RESPONSE_TOO_LARGE"
    OVERLOADED = "ERROR_REASON_OVERLOADED"
    # Resolver
    UNKNOWN_SOURCE = "ERROR_REASON_UNKNOWN_SOURCE"
    INVALID_CLAIM = "ERROR_REASON_INVALID_CLAIM"
    DUPLICATE_CLAIM_ID = "ERROR_REASON_DUPLICATE_CLAIM_ID"
    RELATION_WITHOUT_ID = "ERROR_REASON_RELATION_WITHOUT_ID"
    # Planner
    RESOLVER_UNAVAILABLE = "ERROR_REASON_RESOLVER_UNAVAILABLE"
    RESOLVER_DEADLINE_EXCEEDED = "ERROR_REASON_RESOLVER_DEADLINE_EXCEEDED"
    RESOLVER_FAILED = "ERROR_REASON_RESOLVER_FAILED"
    RESOLVER_POLICY_MISMATCH = "ERROR_REASON_RESOLVER_POLICY_MISMATCH"
    # Adjudication
    HUMAN_REVIEWER_REQUIRES_ATTESTATION = "ERROR_REASON_HUMAN_REVIEWER_REQUIRES_ATTESTATION"
    REVIEWER_NOT_FOUND = "ERROR_REASON_REVIEWER_NOT_FOUND"
    REVIEWER_ALREADY_EXISTS = "ERROR_REASON_REVIEWER_ALREADY_EXISTS"
    CASE_NOT_FOUND = "ERROR_REASON_CASE_NOT_FOUND"
    CASE_EXPIRED = "ERROR_REASON_CASE_EXPIRED"
    REVIEW_ALREADY_SUBMITTED = "ERROR_REASON_REVIEW_ALREADY_SUBMITTED"
    ROUND_ALREADY_RESOLVED = "ERROR_REASON_ROUND_ALREADY_RESOLVED"
    CASE_FROZEN = "ERROR_REASON_CASE_FROZEN"
    ROUND_MISMATCH = "ERROR_REASON_ROUND_MISMATCH"
    LABEL_NOT_A_CANDIDATE = "ERROR_REASON_LABEL_NOT_A_CANDIDATE"
    NOT_ENOUGH_REVIEWS = "ERROR_REASON_NOT_ENOUGH_REVIEWS"
    REVIEWS_NOT_UNANIMOUS = "ERROR_REASON_REVIEWS_NOT_UNANIMOUS"
    REVIEWS_NOT_DISAGREEING = "ERROR_REASON_REVIEWS_NOT_DISAGREEING"
    ADJUDICATOR_IS_REVIEWER = "ERROR_REASON_ADJUDICATOR_IS_REVIEWER"
    ROUND_NOT_RESOLVED = "ERROR_REASON_ROUND_NOT_RESOLVED"
    GOLD_LABEL_REVISION_EXISTS = "ERROR_REASON_GOLD_LABEL_REVISION_EXISTS"
    GOLD_LABEL_DIGEST_MISMATCH = "ERROR_REASON_GOLD_LABEL_DIGEST_MISMATCH"
    GOLD_LABEL_INVALID = "ERROR_REASON_GOLD_LABEL_INVALID"
    STORED_RECORD_INVALID = "ERROR_REASON_STORED_RECORD_INVALID"
    FIXTURE_REVIEWERS_DISABLED = "ERROR_REASON_FIXTURE_REVIEWERS_DISABLED"
    ROUND_COMPLETE = "ERROR_REASON_ROUND_COMPLETE"
    STORAGE_UNAVAILABLE = "ERROR_REASON_STORAGE_UNAVAILABLE"
    AUTHENTICATION_REQUIRED = "ERROR_REASON_AUTHENTICATION_REQUIRED"
    APPROVAL_NOT_FOUND = "ERROR_REASON_APPROVAL_NOT_FOUND"
    CANDIDATE_FORBIDDEN = "ERROR_REASON_CANDIDATE_FORBIDDEN"
    CANDIDATE_NOT_APPROVABLE = "ERROR_REASON_CANDIDATE_NOT_APPROVABLE"
    APPROVER_IS_REQUESTER = "ERROR_REASON_APPROVER_IS_REQUESTER"
    APPROVER_ALREADY_DECIDED = "ERROR_REASON_APPROVER_ALREADY_DECIDED"
    APPROVAL_NOT_PENDING = "ERROR_REASON_APPROVAL_NOT_PENDING"
    APPROVAL_NOT_GRANTED = "ERROR_REASON_APPROVAL_NOT_GRANTED"
    APPROVAL_ALREADY_CONSUMED = "ERROR_REASON_APPROVAL_ALREADY_CONSUMED"
    APPROVAL_CANDIDATE_MISMATCH = "ERROR_REASON_APPROVAL_CANDIDATE_MISMATCH"
    REVIEW_NOT_FOUND = "ERROR_REASON_REVIEW_NOT_FOUND"
    REVIEW_SUPERSEDED = "ERROR_REASON_REVIEW_SUPERSEDED"
    REVIEW_WITHDRAWN = "ERROR_REASON_REVIEW_WITHDRAWN"
    CASE_NOT_ASSIGNED = "ERROR_REASON_CASE_NOT_ASSIGNED"
    FEATURE_NOT_INSTALLED = "ERROR_REASON_FEATURE_NOT_INSTALLED"


@dataclass(frozen=True)
class FieldViolation:
    """One bad field: its path in the request (``evidence.claims[3].confidence``) and why."""

    field: str
    description: str


@dataclass
class AssayError(Exception):
    """Base of every error a service reports on purpose.

    Subclasses fix the status family; ``reason`` says precisely what happened.
    """

    reason: Reason
    message: str
    violations: Sequence[FieldViolation] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    # Violations found but left out of ``violations`` (a check that keeps only the first
    # few still counts the rest), and whether the check looked at everything: one that
    # stopped early to bound its work sets False, and clients are told "at least".
    more_violations: int = 0
    violations_complete: bool = True
    # Seconds after which repeating the call may succeed: the status then carries a
    # ``google.rpc.RetryInfo`` detail (None: the error says nothing about retrying).
    retry_delay: float | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class InvalidArgument(AssayError):
    """The request is malformed or a field is missing, malformed or out of range."""


class NotFound(AssayError):
    """A named entity does not exist."""


class AlreadyExists(AssayError):
    """The entity to create exists already (and the request is not a retry of it)."""


class FailedPrecondition(AssayError):
    """The request is well formed but a domain rule forbids it in the current state."""


class DataLoss(AssayError):
    """Stored data failed an integrity check: it is never returned as if it were fine."""


class Unavailable(AssayError):
    """A dependency cannot be reached, or the server is shutting down; retrying may help."""


def storage_unavailable(message: str, retry_delay: float | None) -> Unavailable:
    """UNAVAILABLE, reason STORAGE_UNAVAILABLE: the database could not be reached. With a
    ``retry_delay`` when repeating the call is safe (nothing was stored, or the write is
    keyed by a request id); None when a write's outcome is unknown and repeating it could
    act twice."""
    metadata = {} if retry_delay is not None else {"commit_outcome": "unknown"}
    return Unavailable(
        Reason.STORAGE_UNAVAILABLE, message, metadata=metadata, retry_delay=retry_delay
    )


class ResourceExhausted(AssayError):
    """The request would take more of a bounded resource (memory, rows) than one request
    may: repeating it cannot succeed, unlike a refusal for being busy (``Reason.OVERLOADED``)."""


class Unauthenticated(AssayError):
    """The call carries no credential, or one that cannot be trusted."""


class PermissionDenied(AssayError):
    """The authenticated caller may not do this (role, identity or tenant)."""


class DeadlineExceeded(AssayError):
    """The work could not finish within the caller's deadline."""


# How much of a request's own value an error may quote (see ``excerpt``).
EXCERPT_CHARS = 64


def excerpt(value: str, limit: int = EXCERPT_CHARS) -> str:
    """A request value as an error may quote it: ``repr`` of at most ``limit`` characters.

    Errors never echo a whole input value: a 6,000-character source string would make
    the error itself too large to deliver. ``repr`` escapes control characters, so the
    quote cannot break a log line or a terminal.
    """
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}… ({len(value)} characters)"


def invalid_field(reason: Reason, path: str, description: str) -> InvalidArgument:
    """Shorthand for the common case of one bad field."""
    return InvalidArgument(reason, f"{path}: {description}", [FieldViolation(path, description)])


# Violations an error keeps; the rest are only counted (the runtime's status lists fewer still).
MAX_VIOLATIONS = 100


class Violations:
    """Every bad field of a request, found before any of them is reported.

    A caller fixing a request should see everything wrong with it at once, not one field
    per round trip, so request checks record into one of these and raise once at the end
    (``raise_if_any``). The first ``MAX_VIOLATIONS`` are kept and the rest counted, so a
    request of 100,000 bad items costs a bounded error. Field checks written to raise at
    their first problem (``require_id`` and the like) join through ``check`` or
    ``catching``, which record what they raise and carry on.
    """

    def __init__(self) -> None:
        self.kept: list[FieldViolation] = []
        self.more = 0
        self._caught: list[InvalidArgument] = []

    def __bool__(self) -> bool:
        return bool(self.kept or self.more or self._caught)

    def add(self, path: str, description: str) -> None:
        self.extend([FieldViolation(path, description)])

    def extend(self, violations: Iterable[FieldViolation]) -> None:
        for violation in violations:
            if len(self.kept) < MAX_VIOLATIONS:
                self.kept.append(violation)
            else:
                self.more += 1

    @contextmanager
    def catching(self) -> Iterator[None]:
        """Runs a block of raising field checks, recording the ``InvalidArgument`` it raises."""
        try:
            yield
        except InvalidArgument as error:
            # Kept without its traceback: the traceback's frames hold the collector (and the
            # request being checked), so keeping both would make a reference cycle that keeps
            # a large rejected request alive until the cyclic collector runs.
            self._caught.append(error.with_traceback(None))
            self.extend(error.violations)
            self.more += error.more_violations

    def check(self, check: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
        """``check(*args, **kwargs)``, or None after recording the violation it raised."""
        with self.catching():
            return check(*args, **kwargs)
        return None

    def summary(self) -> str:
        """The first violation, and how many others there are."""
        if not self.kept:  # only checks that raised without naming a field
            return self._caught[0].message
        first = self.kept[0]
        others = len(self.kept) - 1 + self.more
        return f"{first.field}: {first.description}" + (f" (and {others} more)" if others else "")

    def error(
        self,
        kind: type[AssayError] = InvalidArgument,
        reason: Reason | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> AssayError:
        """The error listing them. One error caught from a raising check is returned as it
        was raised (its own reason and message); otherwise ``reason`` is the first caught
        error's, or INVALID_FIELD."""
        alone = len(self._caught) == 1 and (self.kept, self.more) == (
            list(self._caught[0].violations),
            self._caught[0].more_violations,
        )
        if alone and reason is None and metadata is None and kind is InvalidArgument:
            return dataclasses.replace(self._caught[0])  # a fresh one: raising it adds no cycle
        chosen = reason or (self._caught[0].reason if self._caught else Reason.INVALID_FIELD)
        return kind(
            chosen, self.summary(), list(self.kept), dict(metadata or {}), more_violations=self.more
        )

    def raise_if_any(
        self,
        kind: type[AssayError] = InvalidArgument,
        reason: Reason | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        """Raises ``error(...)`` when anything was found (INVALID_ARGUMENT by default)."""
        if self:
            raise self.error(kind, reason, metadata)

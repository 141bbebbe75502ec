"""Safe retries: the first response to a ``request_id`` is stored with the change it reports.

A job wrapped by ``retryable`` first looks the request id up; if it was seen
with the same method and the same request digest, the stored response bytes
are returned and nothing runs again — so a client that lost an answer (a
timeout, a crash of the server after the commit) can simply retry. The same
id with a different request is refused with REQUEST_ID_REUSED rather than
silently answered with someone else's result. The record is written in the
same transaction as the change, so there is never one without the other.

Request ids belong to the caller: a record is keyed by the authenticated
(issuer, subject) and the id, so another principal reusing the id is simply a
different key — it neither receives the first caller's response nor is refused.
In dev mode the owner is ("", "").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypeVar

from assay.errors import Reason, invalid_field
from assay.services.adjudication.domain import permissions
from assay.services.adjudication.domain.fields import check_request_id
from assay.services.adjudication.domain.model import Caller
from assay.services.adjudication.storage.interface import StoredResponse, WriteTx

T = TypeVar("T")


@dataclass(frozen=True)
class RequestKey:
    """A retry key: the request id (may be empty: no retry safety), the method, a digest of
    the whole request, and whose id it is: (issuer, subject), ("", "") in dev mode."""

    request_id: str
    method: str
    request_digest: str
    owner: tuple[str, str] = ("", "")


def owned(key: RequestKey, caller: Caller) -> RequestKey:
    """``key`` as ``caller``'s own (``permissions.request_owner``): another principal's
    same id is another key."""
    return replace(key, owner=permissions.request_owner(caller))


@dataclass(frozen=True)
class KeyedJob:
    """The writer job ``retryable`` makes. Its ``request_id`` (empty: none) tells the storage
    whether a write whose commit outcome is unknown is safe to repeat (``storage.faults``)."""

    run: Callable[[WriteTx], bytes]
    request_id: str

    def __call__(self, tx: WriteTx) -> bytes:
        return self.run(tx)


def retryable(
    key: RequestKey,
    job: Callable[[WriteTx, datetime], T],
    render: Callable[[T], bytes],
    scope: Callable[[T], tuple[str, str]],
    clock: Callable[[], datetime],
) -> KeyedJob:
    """The writer job: recall or run, render, remember. ``scope`` gives the (tenant, case)
    the stored response belongs to, so deleting that data deletes the response too."""
    check_request_id(key.request_id)

    def run(tx: WriteTx) -> bytes:
        if key.request_id:
            prior = tx.recall(key.owner, key.request_id)
            if prior is not None:
                if (prior.method, prior.request_digest) != (key.method, key.request_digest):
                    raise invalid_field(
                        Reason.REQUEST_ID_REUSED,
                        "request_id",
                        "was already used for a different request",
                    )
                return prior.response
        result = job(tx, clock())
        raw = render(result)
        if key.request_id:
            tenant, case_id = scope(result)
            stored = StoredResponse(key.method, key.request_digest, raw)
            tx.remember(key.owner, key.request_id, stored, tenant, case_id)
        return raw

    return KeyedJob(run, key.request_id)

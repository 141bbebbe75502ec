"""What every adjudication servicer method takes from its call: the caller, as the rules see
it, the request's retry key, and a response's deterministic bytes (what a retried request id
returns again)."""

from __future__ import annotations

from typing import Any

from assay.runtime.auth.principal import current_principal
from assay.services.adjudication.domain.model import Caller
from assay.services.adjudication.use_cases.retries import RequestKey
from assay.services.adjudication.wire import convert, scalars


def response_bytes(message: Any) -> bytes:
    data: bytes = message.SerializeToString(deterministic=True)
    return data


def request_key(request: Any) -> RequestKey:
    """The retry key of a mutation: its request id, its method (the request message's name
    without ``Request``, as the contract's lint rule names every request) and its digest."""
    method = request.DESCRIPTOR.name.removesuffix("Request")
    return RequestKey(request.request_id, method, scalars.request_digest(request))


def caller() -> Caller:
    """The authenticated principal of the current call (``current_principal``)."""
    return convert.caller(current_principal())

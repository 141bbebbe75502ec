"""The headers every console response carries, and the CSRF check every change passes.

Content-Security-Policy allows the console's own script and style files only: no inline
script or style, no other origin, no framing (``frame-ancestors 'none'``), forms posting
only to the console. ``nosniff`` and a ``same-origin`` referrer policy go with it, and
pages are never cached. A change (any POST) must carry the session's CSRF token, compared
in constant time: a page of another site cannot post on a signed-in person's behalf.
"""

from __future__ import annotations

import hmac

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)


class SecurityHeaders:
    """ASGI middleware adding ``HEADERS`` to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in HEADERS if n not in names]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)


def csrf_ok(expected: str, given: str | None) -> bool:
    """Whether ``given`` (the form's ``csrf`` field) is the session's token."""
    return bool(given) and hmac.compare_digest(expected.encode(), str(given).encode())

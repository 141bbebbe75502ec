"""The headers every console response carries, and the CSRF check every change passes.

Content-Security-Policy allows the console's own script and style files only: no inline
script or style, no other origin, no framing (``frame-ancestors 'none'``), forms posting
only to the console. ``nosniff`` and a ``same-origin`` referrer policy go with it, and
pages are never cached (the package's static files are, for an hour). A change (any POST)
must carry the session's CSRF token, compared in constant time: a page of another site
cannot post on a signed-in person's behalf.
"""

from __future__ import annotations

import hmac

from starlette.middleware.gzip import GZipMiddleware
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
)
# Pages hold a person's data and CSRF token: never stored. The package's own script and
# style, the same for everyone, may be kept a while.
NO_STORE = (b"cache-control", b"no-store")
STATIC_CACHE = (b"cache-control", b"public, max-age=3600")


class CompressStatic:
    """gzip for the package's static files only. Pages are never compressed: they carry the
    session's CSRF token beside text others stored, the mix a compression side channel
    (BREACH) reads a secret from."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.zipped = GZipMiddleware(app, minimum_size=256)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        static = scope["type"] == "http" and scope["path"].startswith("/static/")
        await (self.zipped if static else self.app)(scope, receive, send)


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
                static = scope["path"].startswith("/static/")
                extra = [
                    (n, v)
                    for n, v in (*HEADERS, STATIC_CACHE if static else NO_STORE)
                    if n not in names
                ]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)


def csrf_ok(expected: str, given: str | None) -> bool:
    """Whether ``given`` (the form's ``csrf`` field) is the session's token."""
    return bool(given) and hmac.compare_digest(expected.encode(), str(given).encode())

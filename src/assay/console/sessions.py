"""Signed-in sessions, kept on the server: the browser holds only a random id.

The cookie is ``__Host-assay``: HttpOnly (no script reads it), Secure, SameSite=Lax, path
``/`` and no domain (the ``__Host-`` prefix makes the browser refuse it otherwise). The
person's token, refresh token and CSRF secret never leave the server. A session ends at
its own deadline or its token's, whichever is first; signing out forgets it at once.
Sessions live in this process's memory (bounded), so a restart signs everyone out.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from assay.console.own_reviews import OwnReviews

COOKIE = "__Host-assay"
# Holds the token the sign-in page's forms carry (login CSRF), for ten minutes.
SIGNIN_COOKIE = "__Host-assay-signin"
MAX_SESSIONS = 10_000


@dataclass
class Session:
    """One signed-in person: who (issuer, subject), the bearer token the console calls the
    services with, and what the sign-in gave besides."""

    session_id: str
    issuer: str
    subject: str
    token: str
    expires_at: float
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    refresh_token: str = ""
    id_token: str = ""
    name: str = ""
    signed_in_at: float = field(default_factory=time.time, init=False)
    # The reviews given in this sign-in, so they can be amended or withdrawn here.
    own_reviews: OwnReviews = field(default_factory=OwnReviews, init=False, repr=False)

    def alive(self, now: float) -> bool:
        return now < self.expires_at


class SessionStore:
    """Sessions by id, oldest dropped first past ``MAX_SESSIONS``."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def create(
        self, issuer: str, subject: str, token: str, expires_at: float, **extra: str
    ) -> Session:
        session = Session(secrets.token_urlsafe(32), issuer, subject, token, expires_at, **extra)
        self._sessions[session.session_id] = session
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session with this id (an expired one is forgotten)."""
        if not session_id:
            return None
        session = self._sessions.get(session_id)
        if session is None:
            return None
        if not session.alive(self.clock()):
            del self._sessions[session_id]
            return None
        return session

    def end(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)


def cookie_options(secure: bool = True) -> dict[str, object]:
    """What ``Response.set_cookie`` is given for the session cookie."""
    return {"httponly": True, "secure": secure, "samesite": "lax", "path": "/"}

"""A file read again when it changes, looked at at most once per interval.

One rule for every file a service watches (the JWKS file, the resolver's reliability table,
the planner's observations file): a new version needs no restart, and the calls in between
cost one comparison. A caller asks ``look(now)`` on its way through; once ``interval``
seconds have passed since the last look, the files are stat-ed, and when their signature
(inode, size and modification time; a file that cannot be stat-ed counts as gone) differs
from the version in hand, the new signature is returned. The caller then reads the files
itself and keeps what it had when they cannot be read or parsed. A new file renamed over the
old one has another inode, so it is noticed even within one modification-time tick.

A version that could not be read is tried again or not by the caller's choice (``retry``).
The clock is the caller's (``time.monotonic``), so tests move it. A watch holds no lock: a
caller that looks from several threads lets one look at a time.
"""

from __future__ import annotations

import os

CHECK_SECONDS = 1.0

# Per watched path, in order: its stat fields, or None when it cannot be stat-ed.
Version = tuple[tuple[int, ...] | None, ...]


class FileWatch:
    """When to read ``paths`` again: the version in hand and when the next look is due
    (module docstring)."""

    def __init__(
        self,
        *paths: str | os.PathLike[str],
        now: float,
        interval: float = CHECK_SECONDS,
        retry: bool = True,
    ) -> None:
        """Takes the files' version now (the one the caller is about to read, or has read);
        the first look is due ``interval`` after ``now``. ``retry``: a version the caller
        did not pass to ``took`` is offered again at every look until it reads (so a fix
        that leaves the signature alone, such as a chmod, is noticed); without it, it waits
        for the files to change again (one attempt, so one warning, per version)."""
        self.paths = paths
        self.interval = interval
        self.retry = retry
        self._held = self.version()
        self._due = now + interval

    def version(self) -> Version:
        """The files' signature now."""
        found: list[tuple[int, ...] | None] = []
        for path in self.paths:
            try:
                status = os.stat(path)
            except OSError:
                found.append(None)
                continue
            found.append((status.st_ino, status.st_size, status.st_mtime_ns))
        return tuple(found)

    def due(self, now: float) -> bool:
        """Whether the next look would stat the files (the interval has passed)."""
        return now >= self._due

    def look(self, now: float) -> Version | None:
        """The files' new version to read, or None: not due yet, or unchanged. A look
        starts the next interval. Without ``retry`` the version counts as read already."""
        if now < self._due:
            return None
        self._due = now + self.interval
        version = self.version()
        if version == self._held:
            return None
        if not self.retry:
            self._held = version
        return version

    def took(self, version: Version) -> None:
        """The caller read ``version``: it is not offered again until the files change."""
        self._held = version

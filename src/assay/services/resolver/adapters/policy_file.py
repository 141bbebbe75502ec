"""The policy in force: the builtin table, or a table file read again when it changes.

A request takes the policy once (``current``) and is read, resolved and written under
it, so a table that changes mid-request never mixes into it. By the rule every watched
file follows (``assay.runtime.file_watch``) the file is looked at at most once per
``CHECK_SECONDS``, by whichever request asks first after that, and read again when its
inode, size or modification time changed: a new table needs no restart, and the calls
in between cost one clock read. Replacing the file by a rename (write a new file, then
move it over the old) is what keeps a reader from seeing it half-written.

A file that cannot be read, is not JSON or fails ``parse_table`` keeps the table that
was good, with one ``reliability_table_refused`` warning per version of the file naming
it and the bad entry (the entry's value at most, never the file's content); a later
version is read again. A new table is logged as ``reliability_table_reloaded`` with the
old and new digests; a file rewritten with the same entries keeps the table in force.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Protocol

from assay.reliability_table import TableError
from assay.runtime import file_watch
from assay.runtime.logging import get_logger
from assay.services.resolver.domain.policy import (
    DEFAULT_POLICY,
    Policy,
    chosen_table,
    read_policy,
)

_log = get_logger("assay.resolver")

CHECK_SECONDS = file_watch.CHECK_SECONDS


@dataclass(frozen=True, slots=True)
class Loaded:
    """A policy and when it was read (seconds since the epoch)."""

    policy: Policy
    load_time: float


class PolicySource(Protocol):
    """Where the policy in force comes from."""

    def current(self) -> Loaded:
        """The policy in force now; the same object until the table changes."""
        ...


class FixedPolicy:
    """One policy for the life of the service: the builtin table, or a test's."""

    def __init__(self, policy: Policy) -> None:
        self._loaded = Loaded(policy, time.time())

    def current(self) -> Loaded:
        return self._loaded


class PolicyFile:
    """The table of a file, read again when it changes (module docstring)."""

    def __init__(self, path: str) -> None:
        """Reads the file now: TableError (naming file and entry) stops start-up."""
        self.path = path
        # A version is read once (one warning for a bad one), not at every look.
        self._watch = file_watch.FileWatch(
            path, now=time.monotonic(), interval=CHECK_SECONDS, retry=False
        )
        self._loaded = Loaded(read_policy(path), time.time())
        self._checking = threading.Lock()

    def current(self) -> Loaded:
        now = time.monotonic()
        if not self._watch.due(now):
            return self._loaded
        # One caller looks; the others go on with the table in force meanwhile.
        if not self._checking.acquire(blocking=False):
            return self._loaded
        try:
            if self._watch.look(now) is not None:
                self._read()
        finally:
            self._checking.release()
        return self._loaded

    def _read(self) -> None:
        old = self._loaded.policy
        try:
            policy = read_policy(self.path)
        except TableError as error:
            _log.warning(
                "reliability_table_refused", path=self.path, why=str(error), kept=old.digest
            )
            return
        if policy.digest == old.digest:
            return
        self._loaded = Loaded(policy, time.time())
        _log.info(
            "reliability_table_reloaded",
            path=self.path,
            old_digest=old.digest,
            new_digest=policy.digest,
        )


def policy_source(path: str | None) -> FixedPolicy | PolicyFile:
    """The table file ``path`` (or ``$ASSAY_RELIABILITY_TABLE``) watched, else the builtin
    table. Raises TableError when the file is bad at start."""
    chosen = chosen_table(path)
    return FixedPolicy(DEFAULT_POLICY) if chosen is None else PolicyFile(chosen)

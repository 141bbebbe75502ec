"""Files the CLI writes for its user alone: created owner-only (0600), whole or not at all.

An export holds a tenant's gold labels, case content and reviewer ids; a saved checkpoint is
what an auditor later holds the operator to. Written with the default mode (0644 under the
usual umask) either is readable by every account on the host, and a ``chmod`` after writing
leaves a window in which it is. So each file is a fresh temporary file beside its target,
created by ``tempfile.mkstemp`` (``O_CREAT | O_EXCL``, mode 0600: the umask can only remove
bits), written and flushed to disk, then renamed over the target (``os.replace``).

Overwriting therefore replaces an existing file with a new owner-only one — it never writes
into the old file, whatever its mode or owner — and no reader sees a half-written file: an
interrupted or failed write leaves the target as it was and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

MODE = 0o600


@contextlib.contextmanager
def private_file(path: Path) -> Iterator[TextIO]:
    """A text sink whose content becomes ``path``, mode 0600, when the block ends without an
    exception (and is discarded when it raises). ``OSError`` when the folder is not writable."""
    fd, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".partial", dir=path.parent if path.parent else None
    )
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as sink:
            yield sink
            sink.flush()
            os.fsync(sink.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def write_private(path: Path, text: str) -> None:
    """``text`` as the whole content of ``path``, created 0600 (see the module docstring)."""
    with private_file(path) as sink:
        sink.write(text)

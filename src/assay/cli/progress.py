"""Progress on stderr for work that takes a while: batches, export, sweep.

Quick work shows nothing: the bar appears only once the work has taken
``AFTER_SECONDS``, and only on a terminal (the callers pass ``enabled``), so
scripts and pipes never see it. It is drawn on stderr, never stdout, so output
piped on (``assay export --out - | …``) stays clean, and it is transient: once
the work ends, the bar is gone.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

AFTER_SECONDS = 1.0


@contextlib.contextmanager
def progress(
    label: str,
    total: int | None = None,
    *,
    enabled: bool,
    unit: str = "",
    out: Console | None = None,
    after: float | None = None,
) -> Iterator[Callable[[int], None]]:
    """Yields ``advance(n)``. ``total`` None: a count with a spinner (work of unknown size,
    or one long call); else a bar of ``total``. A no-op when not ``enabled``."""
    if not enabled:
        yield lambda n: None
        return
    count = "{task.completed:,}" + ("" if total is None else "/{task.total:,}")
    columns: list[ProgressColumn | str] = [SpinnerColumn(), TextColumn(label), BarColumn()]
    columns += [TextColumn(f"{count} {unit}".rstrip()), TimeElapsedColumn()]
    bar = Progress(*columns, console=out or Console(stderr=True), transient=True)
    task = bar.add_task(label, total=total)
    timer = threading.Timer(AFTER_SECONDS if after is None else after, bar.start)
    timer.daemon = True
    timer.start()
    try:
        yield lambda n: bar.advance(task, n)
    finally:
        timer.cancel()
        timer.join()  # a start that already began ends before the bar stops
        bar.stop()

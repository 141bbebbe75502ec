"""Generate the blocking clients from the asyncio ones, or check the committed copy is current.

The asyncio clients (``src/assay/client/_async/``) are the only hand-written source;
the blocking ones (``src/assay/client/_sync/``) are made from them by unasync, as
httpcore makes its sync half: ``async`` and ``await`` dropped, ``async for`` a plain
``for``, ``__aenter__``/``AsyncIterator`` and the like their blocking names, and the
rules below for Assay's own names. The output is import-sorted and formatted with the
project's ruff settings, so it passes the lint gates as it comes out. ``--check``
regenerates into a temporary directory and fails when the committed files differ: the
test suite runs it, so a change to the asyncio source without regenerating, or an edit
by hand to the generated code, cannot land.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import unasync  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "src" / "assay" / "client"
SOURCE = CLIENT / "_async"
TARGET = CLIENT / "_sync"

# Names unasync's default rule (``AsyncX`` -> ``SyncX``) would get wrong or does not know.
# Where the two transports really differ, the source uses a name these map: the channel
# type (``assay.client.calls.AsyncChannel``, which the default rule makes ``SyncChannel``)
# and the channel factory.
REPLACEMENTS = {
    "_async": "_sync",
    "aio_channel": "sync_channel",
    "AsyncResolverClient": "ResolverClient",
    "AsyncPlannerClient": "PlannerClient",
    "AsyncAdjudicationClient": "AdjudicationClient",
    "AsyncApprovalClient": "ApprovalClient",
}
# unasync leaves comments and prose alone: the few that name the transport.
TEXT_REPLACEMENTS = {
    # ASYNC109 is an asyncio rule: the blocking code needs neither the exemption nor its reason.
    "# `timeout` here is the gRPC deadline sent with the call (the server sees it), not a\n"
    "# local wait that asyncio.timeout could replace.\n"
    "# ruff: noqa: ASYNC109\n\n": "",
    "Asyncio client for": "Blocking client for",
    "Base of the asyncio clients": "Base of the blocking clients",
}

# The fixes the generated code needs to pass the project's lint: imports re-sorted after the
# renames, and a loop of yields (all ``async for`` allows) made ``yield from``. ruff places an
# import by whether its module exists on disk, which a fresh _sync does not yet: the package
# is named first-party so the order never depends on what was there before.
LINT_FIXES = (
    "--fix",
    "--unsafe-fixes",
    "--select",
    "I,UP028",
    "--quiet",
    "--config",
    "lint.isort.known-first-party=['assay']",
)

INIT = '''"""The blocking clients, generated from ``assay.client._async`` (do not edit).

tools/gen_sync_client.py writes every module here; a contract test fails when they
differ from what it would write. Import the clients from ``assay.client``.
"""
'''


def _header(name: str) -> str:
    return (
        f"# Generated from src/assay/client/_async/{name} by tools/gen_sync_client.py:\n"
        "# edit the asyncio source and regenerate (`just sync-client`), never this file.\n"
    )


def _ruff(*args: str, source: str, filename: Path) -> str:
    # ruff is installed beside this interpreter (the test extra); reading the code from stdin
    # under its final path gives it the project's settings wherever the output is written.
    beside = Path(sys.executable).parent / "ruff"
    ruff = str(beside) if beside.exists() else shutil.which("ruff")
    if ruff is None:
        raise SystemExit("ruff not found: pip install -e '.[test]'")
    result = subprocess.run(
        [ruff, *args, "--stdin-filename", str(filename), "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"ruff {args[0]} failed on {filename.name}:\n{result.stderr}")
    return result.stdout


def _generate(out: Path) -> None:
    """Write the blocking modules for every asyncio module into ``out``."""
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / "_async"
        staged.mkdir()
        sources = sorted(p for p in SOURCE.glob("*.py") if p.name != "__init__.py")
        for path in sources:
            shutil.copy(path, staged / path.name)
        rule = unasync.Rule("/_async/", "/_sync/", additional_replacements=REPLACEMENTS)
        unasync.unasync_files([str(staged / p.name) for p in sources], [rule])
        out.mkdir(parents=True, exist_ok=True)
        for path in sources:
            text = (Path(tmp) / "_sync" / path.name).read_text(encoding="utf-8")
            for old, new in TEXT_REPLACEMENTS.items():
                text = text.replace(old, new)
            final = TARGET / path.name
            text = _ruff("check", *LINT_FIXES, source=text, filename=final)
            text = _ruff("format", "--quiet", source=_header(path.name) + text, filename=final)
            (out / path.name).write_text(text, encoding="utf-8")
    (out / "__init__.py").write_text(INIT, encoding="utf-8")


def _modules(root: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(root.glob("*.py"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if committed code is stale")
    args = parser.parse_args(argv)
    if not args.check:
        for old in TARGET.glob("*.py"):
            old.unlink()
        _generate(TARGET)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        _generate(Path(tmp) / "_sync")
        fresh = _modules(Path(tmp) / "_sync")
    committed = _modules(TARGET)
    stale = sorted(
        name for name in set(fresh) | set(committed) if fresh.get(name) != committed.get(name)
    )
    if stale:
        print(
            "stale generated sync client (run `just sync-client`): " + ", ".join(stale),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

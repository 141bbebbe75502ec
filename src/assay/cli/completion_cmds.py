"""``assay completion bash|zsh|fish``: print a shell completion script.

The script is generated from the parser itself by ``shtab`` (so it never lists a command
or flag that does not exist), at the moment it is asked for: regenerate it after an
upgrade. Nothing is installed; the help's example shows where each shell looks.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

SHELLS = ("bash", "zsh", "fish")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("completion", help="print a shell completion script")
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete for")
    parser.set_defaults(handler=_completion)


def script(shell: str) -> str:
    """The completion script for ``shell``, generated from the whole ``assay`` parser."""
    import shtab

    from assay.cli.main import build_parser

    text: str = shtab.complete(build_parser(), shell=shell)
    return text


def _completion(args: argparse.Namespace) -> int:
    sys.stdout.write(script(args.shell))
    return 0

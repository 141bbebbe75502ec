"""Read the shell commands a Markdown document shows, so a test can run them as printed and
fail when the document and the product drift apart.

``section_blocks`` gives the ```bash blocks under one heading (up to the next heading of
the same or a higher level, outside code blocks); ``logical_commands`` splits a block into
commands, keeping each command's continuation lines (a trailing ``\\``) and its trailing
comment.
"""

from __future__ import annotations

import re
from pathlib import Path


def section_blocks(document: Path, heading: str) -> list[str]:
    """The ```bash blocks of the section that starts at the line ``heading``."""
    text = document.read_text(encoding="utf-8")
    marker = f"\n{heading}\n"
    assert marker in text, f"{document} lost its section {heading!r}"
    body = text.split(marker, 1)[1]
    depth = len(heading.split(" ", 1)[0])
    kept: list[str] = []
    fenced = False
    for line in body.splitlines(keepends=True):
        fenced ^= line.startswith("```")
        if not fenced and re.match(rf"#{{1,{depth}}} ", line):
            break
        kept.append(line)
    section = "".join(kept)
    return re.findall(r"```bash\n(.*?)```", section, flags=re.DOTALL)


def logical_commands(block: str) -> list[str]:
    """A block's commands, each with its continuation lines kept (comment-only and blank lines
    between commands are dropped)."""
    commands: list[str] = []
    current: list[str] = []
    for line in block.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current.append(line)
        if not line.rstrip().endswith("\\"):
            commands.append("\n".join(current))
            current = []
    assert not current, f"a command ends in a continuation: {current}"
    return commands


def map_ports(command: str, ports: dict[int, int]) -> str:
    """``command`` with each documented default port (``localhost:50051``) mapped to the port
    a test's server really listens on."""
    for default, real in ports.items():
        command = command.replace(f"localhost:{default}", f"localhost:{real}")
    return command

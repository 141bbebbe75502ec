"""The pre-commit hooks run exactly what ``just lint`` runs, so neither drifts from the other."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def lint_recipe() -> list[str]:
    """The commands of the Justfile's ``lint`` recipe, with ``{{venv}}`` spelled out."""
    lines = (ROOT / "Justfile").read_text().splitlines()
    start = lines.index("lint:") + 1
    commands = []
    for line in lines[start:]:
        if not line.startswith("    "):
            break
        commands.append(line.strip().replace("{{venv}}", ".venv/bin"))
    return commands


def hooks() -> list[dict[str, object]]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    return [hook for repo in config["repos"] for hook in repo["hooks"]]


def test_the_hooks_are_the_lint_recipe_in_order() -> None:
    assert [hook["entry"] for hook in hooks()] == lint_recipe()
    assert lint_recipe(), "the Justfile has no lint recipe"


def test_the_hooks_download_nothing() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    assert [repo["repo"] for repo in config["repos"]] == ["local"]
    for hook in hooks():
        assert hook["language"] == "system", hook["id"]
        assert re.match(r"\.venv/bin/\S+", str(hook["entry"])), hook["id"]
        assert hook["pass_filenames"] is False, hook["id"]

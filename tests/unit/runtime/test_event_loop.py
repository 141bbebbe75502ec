"""The server's event loop choice: ``auto`` takes uvloop when installed, names are checked."""

from __future__ import annotations

import asyncio

import pytest

from assay.runtime import loop


async def _name() -> str:
    await asyncio.sleep(0)
    return loop.running_loop_name()


def test_uvloop_is_installed_with_the_package_here() -> None:
    # A dependency on Linux: the default really is uvloop on the machines CI runs on.
    assert loop.uvloop_available()
    assert loop.resolve_loop("auto") == "uvloop"


@pytest.mark.parametrize("name", ["uvloop", "asyncio"])
def test_each_named_loop_is_the_one_that_runs(name: str) -> None:
    assert loop.resolve_loop(name) == name
    assert loop.run(_name(), name) == name


def test_auto_runs_on_uvloop() -> None:
    assert loop.run(_name(), "auto") == "uvloop"


def test_auto_falls_back_to_the_standard_loop_without_uvloop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loop, "uvloop_available", lambda: False)
    assert loop.resolve_loop("auto") == "asyncio"
    assert loop.run(_name(), "auto") == "asyncio"
    with pytest.raises(ValueError, match="not installed"):
        loop.resolve_loop("uvloop")


@pytest.mark.parametrize("name", ["", "trio", "UVLOOP"])
def test_unknown_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="unknown event loop"):
        loop.resolve_loop(name)

"""The dependencies as pyproject.toml declares them, the lock files, and the client's share.

- The lock files (``requirements-test.txt``, which CI installs, and
  ``requirements-server.txt``, which the container image installs) satisfy every
  requirement pyproject.toml states, so a dependency edit without ``just lock`` fails here.
- The lower bounds of grpcio and protobuf are no older than the generated code demands.
- The client library works with only the base dependencies importable: a fresh interpreter
  with every other installed distribution blocked imports all of ``assay.client`` and calls a
  real resolver, sync and async, decoding its rich errors; no module of the server side
  (``assay.runtime``, ``assay.services``, ``assay.cli``) is imported, and every module that
  was is the standard library's, Assay's or a base dependency's.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import re
import sys
import tomllib
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from assay.runtime.server import serving
from assay.services.registry import ServeOptions
from assay.services.resolver.service import build_spec

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = canonicalize_name(PYPROJECT["project"]["name"])
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
PROBE = Path(__file__).with_name("client_without_server.py")
PROBE_TIMEOUT_SECONDS = 60.0
SERVER_SIDE = ("assay.runtime", "assay.services", "assay.cli")


def declared(extras: Iterable[str]) -> list[Requirement]:
    """The base requirements and those of ``extras``, the project's own extras followed."""
    out = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    pending, seen = list(extras), set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in EXTRAS[extra]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == PROJECT:
                pending.extend(requirement.extras)
            else:
                out.append(requirement)
    return out


def locked(name: str) -> dict[NormalizedName, list[tuple[Version, Marker | None]]]:
    """Every pinned line of a lock file: name -> [(version, environment marker)]."""
    pins: dict[NormalizedName, list[tuple[Version, Marker | None]]] = {}
    text = (ROOT / name).read_text(encoding="utf-8")
    for line in text.splitlines():
        if not line or line[0] in " #-\t":
            continue
        requirement = Requirement(line.rstrip(" \\"))
        (pin,) = requirement.specifier
        assert pin.operator == "==", line
        pins.setdefault(canonicalize_name(requirement.name), []).append(
            (Version(pin.version), requirement.marker)
        )
    return pins


LOCKS = {
    "requirements-test.txt": ["test"],
    "requirements-server.txt": ["server"],
}


@pytest.mark.parametrize(("lock", "extras"), LOCKS.items())
def test_the_lock_satisfies_every_declared_requirement(lock: str, extras: list[str]) -> None:
    """Each requirement (with its extras' own requirements) has locked versions, all inside
    its range: a dependency added or narrowed in pyproject.toml without `just lock` fails."""
    pins = locked(lock)
    problems = []
    for requirement in declared(extras):
        name = canonicalize_name(requirement.name)
        if name not in pins:
            problems.append(f"{requirement} is not locked")
            continue
        problems += [
            f"{requirement}: {lock} has {version}"
            for version, _ in pins[name]
            if not requirement.specifier.contains(version, prereleases=True)
        ]
    assert not problems, f"run `just lock`: {problems}"


def test_hashes_for_every_pin() -> None:
    """pip installs the lock in hash-checking mode: every pin carries its hashes."""
    for lock in LOCKS:
        text = (ROOT / lock).read_text(encoding="utf-8")
        pins = sum(len(versions) for versions in locked(lock).values())
        assert pins > 0
        assert len(re.findall(r"==[^\n]*\\\n\s+--hash=sha256:", text)) == pins, lock


def test_the_server_lock_has_the_test_locks_versions() -> None:
    """The image runs the versions CI tested."""
    test, server = locked("requirements-test.txt"), locked("requirements-server.txt")
    for name, versions in server.items():
        assert {v for v, _ in versions} <= {v for v, _ in test[name]}, name


def lower_bound(requirement: Requirement) -> Version:
    bounds = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==")]
    assert len(bounds) == 1, requirement
    return bounds[0]


def base_requirement(name: str) -> Requirement:
    (requirement,) = (r for r in declared([]) if canonicalize_name(r.name) == name)
    return requirement


def test_protobuf_is_no_older_than_the_generated_messages() -> None:
    """The generated messages refuse, at import, a protobuf runtime older than their gencode."""
    found = set()
    for path in (ROOT / "src/assay/v1").glob("*_pb2.py"):
        text = path.read_text(encoding="utf-8")
        check = re.search(
            r"ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,"
            r"\s*(\d+),\s*(\d+),\s*(\d+),",
            text,
        )
        assert check is not None, path
        found.add(Version(".".join(check.groups())))
    assert found
    protobuf = base_requirement("protobuf")
    assert lower_bound(protobuf) >= max(found)
    assert not protobuf.specifier.contains(str(max(found).major + 1))


def test_grpcio_is_no_older_than_the_generated_stubs() -> None:
    generated = set()
    for path in (ROOT / "src/assay/v1").glob("*_pb2_grpc.py"):
        match = re.search(r"GRPC_GENERATED_VERSION = '([^']+)'", path.read_text(encoding="utf-8"))
        assert match is not None, path
        generated.add(Version(match.group(1)))
    assert lower_bound(base_requirement("grpcio")) >= max(generated)


# --- the client without the server -----------------------------------------------------


def installed_closure(requirements: Iterable[Requirement]) -> set[NormalizedName]:
    """The installed distributions these requirements pull in, transitively."""
    found: set[NormalizedName] = set()
    followed: set[tuple[NormalizedName, str]] = set()
    pending = [(r, "") for r in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        found.add(name)
        for wanted in ("", *requirement.extras):
            if (name, wanted) not in followed:
                followed.add((name, wanted))
                subs = importlib.metadata.requires(name) or []
                pending += [(Requirement(text), wanted) for text in subs]
    return found


def top_level_modules() -> dict[str, set[NormalizedName]]:
    """Installed top-level module -> the distributions that provide it."""
    return {
        module: {canonicalize_name(d) for d in dists}
        for module, dists in importlib.metadata.packages_distributions().items()
    }


BASE = installed_closure(declared([]))


def blocked_modules() -> list[str]:
    """Every installed top-level module that no base dependency provides (nor Assay)."""
    return sorted(
        module
        for module, dists in top_level_modules().items()
        if module != "assay" and not dists & BASE
    )


@pytest.fixture
async def resolver_target() -> AsyncIterator[str]:
    spec = await build_spec(ServeOptions(port=0))
    async with serving([spec]) as running:
        yield running[0].address


async def run_probe(target: str) -> dict[str, Any]:
    probe = await asyncio.create_subprocess_exec(
        sys.executable,
        str(PROBE),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    config = json.dumps({"blocked": blocked_modules(), "target": target}).encode()
    stdout, stderr = await asyncio.wait_for(probe.communicate(config), PROBE_TIMEOUT_SECONDS)
    assert probe.returncode == 0, stderr.decode()
    report: dict[str, Any] = json.loads(stdout)
    return report


def test_server_only_packages_are_outside_the_base() -> None:
    """What the blocking probe blocks: the server's packages are among them (else the probe
    below would prove nothing), the client's own are not."""
    blocked = set(blocked_modules())
    assert {"asyncpg", "structlog", "jwt", "cryptography", "opentelemetry", "pyarrow"} <= blocked
    assert {"numpy", "rich", "uvloop", "prometheus_client", "grpc_health"} <= blocked
    assert not {"grpc", "google", "grpc_status"} & blocked


async def test_the_client_works_with_only_its_base_dependencies(resolver_target: str) -> None:
    report = await run_probe(resolver_target)
    for flavour in ("sync", "async"):
        assert report[flavour]["status"] > 0, flavour
        assert report[flavour]["error"] == {
            "type": "InvalidArgumentError",
            "reason": "ERROR_REASON_UNKNOWN_SOURCE",
            "fields": ["evidence.claims[0].source"],
        }, flavour
    assert report["value_round_trip"] == {"a": [1, "b", None]}
    assert "pip install 'assay[columnar]'" in report["columnar_error"]
    server_side = [
        m
        for m in report["modules"]
        if m in SERVER_SIDE or m.startswith(tuple(f"{p}." for p in SERVER_SIDE))
    ]
    assert not server_side
    assert "assay.client.resolver" in report["modules"]


async def test_the_base_dependencies_cover_what_the_client_imports(resolver_target: str) -> None:
    """Every module the client pulled in is the standard library's, Assay's, or provided by
    a distribution that pyproject.toml's base dependencies install."""
    report = await run_probe(resolver_target)
    providers = top_level_modules()
    outside = {
        top: sorted(providers.get(top, set())) or path
        for top, path in report["top_level_files"].items()
        # Modules without a file are built in, or made by an extension module (Cython's).
        if path is not None
        and top not in sys.stdlib_module_names
        and top != "assay"
        and not providers.get(top, set()) & BASE
    }
    assert not outside
    assert {"grpc", "google", "grpc_status"} <= set(report["top_level_files"])

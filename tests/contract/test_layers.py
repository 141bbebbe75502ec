"""The import-layer contracts hold: ``lint-imports`` over ``[tool.importlinter]``.

The contracts in ``pyproject.toml`` say which way imports may point: each service's
rules know no gRPC, protobuf or database driver, every service's layers run one way
(wiring, adapters, use cases, bulk path or storage, messages, domain), the runtime and
the CLI reach a service only through the registry, and the client library imports nothing
from the server side. The console reaches the services through that client library only,
and only the CLI's serve wiring imports it. A file tree can show layers; only a check keeps
them.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
REGISTRY_CONTRACT = "The runtime and the CLI reach a service only through the registry"
CONSOLE_HOST_CONTRACT = "Nothing imports the console but the CLI's serve wiring"


def lint_imports(*args: str) -> subprocess.CompletedProcess[str]:
    # --no-cache: nothing is written into the tree.
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def without_exceptions(name: str, directory: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over only the forbidden contract ``name``, with its sources and
    forbidden modules as in ``pyproject.toml`` but none of its named exceptions."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [contract] = [c for c in config["contracts"] if c["name"] == name]
    forbidden = ", ".join(f'"{m}"' for m in contract["forbidden_modules"])
    sources = ", ".join(f'"{m}"' for m in contract["source_modules"])
    path = directory / "no_exceptions.toml"
    path.write_text(
        "[tool.importlinter]\n"
        'root_packages = ["assay"]\n\n'
        "[[tool.importlinter.contracts]]\n"
        f'name = "{name}"\n'
        'type = "forbidden"\n'
        f"source_modules = [{sources}]\n"
        f"forbidden_modules = [{forbidden}]\n"
    )
    return lint_imports("--config", str(path))


class TestLayers:
    def test_every_contract_is_kept(self) -> None:
        """Every contract of ``[tool.importlinter]`` is kept, and there are some."""
        result = lint_imports()
        assert result.returncode == 0, result.stdout + result.stderr
        assert "0 broken" in result.stdout
        assert " KEPT" in result.stdout

    def test_a_broken_contract_fails(self, tmp_path: Path) -> None:
        """The check is not vacuous: a contract the code breaks (the servicer imports
        gRPC) makes ``lint-imports`` fail and name it."""
        config = tmp_path / "broken.toml"
        config.write_text(
            "[tool.importlinter]\n"
            'root_packages = ["assay"]\n'
            "include_external_packages = true\n\n"
            "[[tool.importlinter.contracts]]\n"
            'name = "servicer without grpc"\n'
            'type = "forbidden"\n'
            'source_modules = ["assay.services.planner.adapters.servicer"]\n'
            'forbidden_modules = ["grpc"]\n'
        )
        result = lint_imports("--config", str(config))
        assert result.returncode != 0
        assert "servicer without grpc BROKEN" in result.stdout

    def test_the_registry_contract_sees_the_cli_import_services(self, tmp_path: Path) -> None:
        """The registry contract is not vacuous: without its named exceptions it finds the
        CLI's real imports of a service (the export commands' adjudication rules)."""
        result = without_exceptions(REGISTRY_CONTRACT, tmp_path)
        assert result.returncode != 0
        assert f"{REGISTRY_CONTRACT} BROKEN" in result.stdout
        assert "assay.cli.export_events -> assay.services.adjudication.domain" in result.stdout

    def test_the_console_contract_sees_the_serve_wiring(self, tmp_path: Path) -> None:
        """Without its named exceptions the console contract finds ``assay serve``'s real
        import of the console, so the exceptions are what keeps it, not a wrong name."""
        result = without_exceptions(CONSOLE_HOST_CONTRACT, tmp_path)
        assert result.returncode != 0
        assert f"{CONSOLE_HOST_CONTRACT} BROKEN" in result.stdout
        assert "assay.cli.serve_cmds -> assay.console" in result.stdout

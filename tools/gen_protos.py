"""Generate the Python code for the Assay contract, or check it is current.

The generated modules (``src/assay/v1/*_pb2.py``, ``*_pb2_grpc.py`` and their
mypy-protobuf ``.pyi`` stubs) are committed so that a plain ``pip install``
needs no code generator. ``--check`` regenerates into a temporary directory
and fails when the committed files differ: the test suite runs it, so a
proto change without regenerated code cannot land.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE_DIR = Path("assay") / "v1"
OUT_ROOT = ROOT / "src"


def _plugin(name: str) -> str:
    # The plugins are installed beside this interpreter by mypy-protobuf; an
    # activated virtualenv is not required.
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} not found: pip install -e '.[test]'")
    return found


def _generate(out_root: Path) -> None:
    well_known = str(resources.files("grpc_tools") / "_proto")
    protos = sorted(
        str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / PACKAGE_DIR).glob("*.proto")
    )
    (out_root / PACKAGE_DIR).mkdir(parents=True, exist_ok=True)
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
        f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
        f"--python_out={out_root}",
        f"--grpc_python_out={out_root}",
        f"--mypy_out={out_root}",
        f"--mypy_grpc_out={out_root}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    init = out_root / PACKAGE_DIR / "__init__.py"
    init.write_text('"""Generated protobuf and gRPC code for assay.v1 (do not edit)."""\n')


def _generated_files(root: Path) -> dict[str, Path]:
    return {p.name: p for p in (root / PACKAGE_DIR).iterdir() if p.is_file()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if committed code is stale")
    args = parser.parse_args(argv)
    if not args.check:
        target = OUT_ROOT / PACKAGE_DIR
        for old in target.glob("*_pb2*.py*"):
            old.unlink()
        _generate(OUT_ROOT)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        _generate(Path(tmp))
        fresh = _generated_files(Path(tmp))
        committed = {
            name: path
            for name, path in _generated_files(OUT_ROOT).items()
            if name.endswith((".py", ".pyi")) and "__pycache__" not in str(path)
        }
        stale = sorted(
            set(fresh) ^ set(committed)
            | {
                n
                for n in set(fresh) & set(committed)
                if not filecmp.cmp(fresh[n], committed[n], shallow=False)
            }
        )
    if stale:
        print("stale generated code (run `just proto`): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

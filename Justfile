# Assay's developer tasks. `just` lists them; `just check` runs what CI runs.

venv := ".venv/bin"
# The resolver `just lock` runs (uv's `pip compile`); installed on demand, not a test dependency.
uv_version := "0.13.9"

# List the recipes.
default:
    @just --list

# Create the virtualenv and install Assay with everything the tests need, from the lock file.
install:
    python3 -m venv .venv
    {{venv}}/pip install -q -r requirements-test.txt
    {{venv}}/pip install -q --no-deps -e .

# requirements-test.txt is what CI and `just install` install, requirements-server.txt what the
# container image does (the server extra with every optional extra, at the same versions).
# Versions already locked stay unless a range excludes them; `just lock --upgrade` moves everything to the newest releases allowed.
# Regenerate the lock files after a dependency edit in pyproject.toml (the suite fails until then).
lock *args:
    {{venv}}/pip install -q 'uv=={{uv_version}}'
    {{venv}}/uv pip compile pyproject.toml --extra test --universal --python-version 3.11 --generate-hashes --no-emit-package assay -o requirements-test.txt {{args}}
    {{venv}}/uv pip compile pyproject.toml --extra server --extra columnar --extra stats --universal --python-version 3.11 --generate-hashes --no-emit-package assay -c requirements-test.txt -o requirements-server.txt

# Regenerate the Python code from proto/ (committed; the suite fails if it is stale).
proto:
    {{venv}}/buf format -w
    {{venv}}/python tools/gen_protos.py

# Regenerate the blocking clients (src/assay/client/_sync) from the asyncio ones (committed; the suite fails if stale).
sync-client:
    {{venv}}/python tools/gen_sync_client.py

# ruff, mypy --strict, buf lint and buf format.
lint:
    {{venv}}/ruff check .
    {{venv}}/ruff format --check .
    {{venv}}/mypy --strict
    {{venv}}/buf lint
    {{venv}}/buf format --diff --exit-code

# buf breaking against the committed baseline image and against main.
breaking:
    {{venv}}/buf breaking --against contract/assay-v1.binpb
    {{venv}}/buf breaking --against '.git#branch=main'

# Accept the current contract as the new baseline (only after a deliberate, reviewed change).
contract-baseline:
    {{venv}}/buf build -o contract/assay-v1.binpb

# Run the tests; arguments go to pytest (e.g. `just test -k resolver -x`).
test *args:
    {{venv}}/python -m pytest {{args}}

# Serve one service in the foreground (resolver, planner or adjudication).
serve service="resolver" *args:
    {{venv}}/assay serve {{service}} {{args}}

# Start every service on its default port, wired together, data in ./assay.db.
up *args:
    {{venv}}/assay up {{args}}

# Run the benchmarks (not tests: they print ratios against same-run baselines).
bench:
    for b in bench/*.py; do {{venv}}/python "$b"; done

# Everything CI runs: the whole suite, which includes the lint, type and contract gates.
check:
    bash .ci/run

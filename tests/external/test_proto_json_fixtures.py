"""The shared proto3 JSON fixtures (tests/fixtures/proto-json) mean the same
thing in Python and in Node: each parses and re-serializes to exactly itself
with protobuf's json_format and with protobuf-es, and each language reads the
other's binary encoding back to the same JSON.

Canonical proto JSON here is what both libraries print by default:
lowerCamelCase field names, enum values by name, fields without presence
omitted when they hold their default (fields with explicit presence, such as
``Claim.reliability``, are printed whenever set, even to zero), Timestamps in
RFC 3339 with 0, 3, 6 or 9 fractional digits. Numbers compare by value: JSON
does not distinguish 86400 from 86400.0, and neither do the fixtures.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format, message
from google.protobuf import symbol_database as _symbol_database

from assay.v1 import (  # noqa: F401  (imported to register the message types)
    claim_pb2,
    gold_pb2,
    plan_pb2,
    resolution_pb2,
)
from tests.support import node

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "proto-json"
FIXTURE_FILES = sorted(FIXTURES.glob("*.json"))
ROOT_TYPES = (
    "assay.v1.Claim",
    "assay.v1.SemanticResolution",
    "assay.v1.EvidencePlan",
    "assay.v1.GoldLabelRevision",
)
# Fields no fixture can hold truthfully: no probe in the catalogue needs a side
# effect the planner never approves, so no real plan has a FORBIDDEN candidate.
UNCOVERED_FIELDS = {"assay.v1.AcquisitionCandidate.forbidden_side_effects"}

# The first Node use may run `npm ci` from the lockfile.
pytestmark = [pytest.mark.external, pytest.mark.timeout(900)]


def canonical_dict(msg: message.Message) -> dict[str, Any]:
    """The canonical proto JSON of ``msg``, as a parsed JSON object."""
    return json_format.MessageToDict(
        msg,
        always_print_fields_with_no_presence=False,
        preserving_proto_field_name=False,
        use_integers_for_enums=False,
    )


def message_class_named(full_name: str) -> type[message.Message]:
    """The generated class of a registered message type."""
    cls: type[message.Message] = _symbol_database.Default().GetSymbol(full_name)
    return cls


def message_class(fixture: Path) -> type[message.Message]:
    """The message type a fixture holds: the first dot-separated part of its name."""
    return message_class_named("assay.v1." + fixture.name.split(".")[0])


def parse_fixture(fixture: Path) -> message.Message:
    """Strictly parse a fixture (unknown fields are an error)."""
    return json_format.Parse(fixture.read_text(encoding="utf-8"), message_class(fixture)())


def same_json(left: Any, right: Any) -> bool:
    """JSON equality that keeps booleans apart from numbers (Python's 1 == True)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return float(left) == float(right)
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same_json(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(same_json, left, right))
    return type(left) is type(right) and bool(left == right)


def key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every object key in ``value``, as a path ("values[].claims[].claimRef")."""
    paths: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            paths.add(path)
            paths |= key_paths(item, path)
    elif isinstance(value, list):
        for item in value:
            paths |= key_paths(item, prefix + "[]")
    return paths


def _fields_set(msg: message.Message, seen: set[str], kinds: set[str]) -> None:
    """Collect the assay.v1 fields ``msg`` sets, recursively, and the Value kinds it holds."""
    for field, value in msg.ListFields():
        if msg.DESCRIPTOR.full_name.startswith("assay.v1."):
            seen.add(field.full_name)
        items = value if field.is_repeated else [value]
        if field.message_type is None:
            continue
        for item in items:
            if field.message_type.full_name == "google.protobuf.Value":
                _value_kinds(item, kinds)
            else:
                _fields_set(item, seen, kinds)


def _value_kinds(value: Any, kinds: set[str]) -> None:
    which = value.WhichOneof("kind")
    kinds.add(str(which))
    if which == "struct_value":
        for item in value.struct_value.fields.values():
            _value_kinds(item, kinds)
    elif which == "list_value":
        for item in value.list_value.values:
            _value_kinds(item, kinds)


def _reachable_fields(full_name: str, out: set[str], visited: set[str]) -> None:
    if full_name in visited or not full_name.startswith("assay.v1."):
        return
    visited.add(full_name)
    desc = message_class_named(full_name).DESCRIPTOR
    for field in desc.fields:
        out.add(field.full_name)
        if field.message_type is not None:
            _reachable_fields(field.message_type.full_name, out, visited)


def fixture_id(path: Path) -> str:
    return path.name


class TestFixturesInPython:
    def test_there_is_a_fixture_for_every_shared_message(self) -> None:
        """Claim, SemanticResolution, EvidencePlan and GoldLabelRevision each have one."""
        types = {message_class(f).DESCRIPTOR.full_name for f in FIXTURE_FILES}
        assert set(ROOT_TYPES) <= types

    @pytest.mark.parametrize("fixture", FIXTURE_FILES, ids=fixture_id)
    def test_round_trips_to_the_same_json(self, fixture: Path) -> None:
        """json_format.Parse then MessageToDict gives back exactly the fixture."""
        original = json.loads(fixture.read_text(encoding="utf-8"))
        again = canonical_dict(parse_fixture(fixture))
        assert same_json(again, original), json.dumps(again, indent=2)

    @pytest.mark.parametrize("fixture", FIXTURE_FILES, ids=fixture_id)
    def test_round_trips_the_same_field_set(self, fixture: Path) -> None:
        """No key is dropped or added, at any depth (a default would vanish here)."""
        original = json.loads(fixture.read_text(encoding="utf-8"))
        again = json.loads(json_format.MessageToJson(parse_fixture(fixture)))
        assert key_paths(again) == key_paths(original)

    @pytest.mark.parametrize("fixture", FIXTURE_FILES, ids=fixture_id)
    def test_binary_round_trip_keeps_the_json(self, fixture: Path) -> None:
        """Binary encoding in between changes nothing."""
        parsed = parse_fixture(fixture)
        again = type(parsed).FromString(parsed.SerializeToString(deterministic=True))
        assert same_json(canonical_dict(again), canonical_dict(parsed))

    def test_fixtures_are_rich(self) -> None:
        """Together they set every field reachable from the four messages and every Value kind."""
        seen: set[str] = set()
        kinds: set[str] = set()
        for fixture in FIXTURE_FILES:
            _fields_set(parse_fixture(fixture), seen, kinds)
        reachable: set[str] = set()
        for name in ROOT_TYPES:
            _reachable_fields(name, reachable, set())
        missing = sorted(reachable - seen - UNCOVERED_FIELDS)
        assert not missing, f"no fixture sets {missing}: extend tests/fixtures/proto-json"
        assert kinds >= {
            "null_value",
            "number_value",
            "string_value",
            "bool_value",
            "struct_value",
            "list_value",
        }

    def test_timestamps_keep_their_precision(self) -> None:
        """Nanosecond, microsecond and millisecond Timestamps print with 9, 6 and 3 digits."""
        texts = "".join(f.read_text(encoding="utf-8") for f in FIXTURE_FILES)
        for stamp in ("10:00:00.123456789Z", "07:45:30.000001Z", "04:12:09.120Z"):
            assert stamp in texts


@pytest.fixture(scope="module")
def node_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """protobuf-es's view of every fixture (clients/node/scripts/proto-json.js), given
    Python's binary encoding of each one as well."""
    binaries = tmp_path_factory.mktemp("python-binpb")
    for fixture in FIXTURE_FILES:
        encoded = parse_fixture(fixture).SerializeToString(deterministic=True)
        (binaries / fixture.name.replace(".json", ".binpb")).write_bytes(encoded)
    node.ensure_generated()
    result = node.run(
        [node.tool("node"), "scripts/proto-json.js", str(FIXTURES), str(binaries)],
        timeout=120,
    )
    assert result.returncode == 0, node.describe(result)
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


class TestFixturesInNode:
    def test_node_saw_every_fixture(self, node_results: dict[str, Any]) -> None:
        """The script read the same files, as the same message types."""
        assert sorted(node_results) == [f.name for f in FIXTURE_FILES]
        for fixture in FIXTURE_FILES:
            expected = message_class(fixture).DESCRIPTOR.full_name
            assert node_results[fixture.name]["type"] == expected

    @pytest.mark.parametrize("fixture", FIXTURE_FILES, ids=fixture_id)
    def test_node_prints_the_same_json(self, fixture: Path, node_results: dict[str, Any]) -> None:
        """protobuf-es fromJson/toJson gives exactly what Python gives (and the fixture)."""
        from_node = node_results[fixture.name]["json"]
        assert same_json(from_node, canonical_dict(parse_fixture(fixture))), json.dumps(
            from_node, indent=2
        )
        assert key_paths(from_node) == key_paths(json.loads(fixture.read_text("utf-8")))

    @pytest.mark.parametrize("fixture", FIXTURE_FILES, ids=fixture_id)
    def test_node_reads_python_binary(self, fixture: Path, node_results: dict[str, Any]) -> None:
        """Python's wire bytes decode in Node to the fixture's JSON."""
        from_python = node_results[fixture.name]["fromPython"]
        assert same_json(from_python, json.loads(fixture.read_text("utf-8")))

    @pytest.mark.parametrize("fixture", FIXTURE_FILES, ids=fixture_id)
    def test_python_reads_node_binary(self, fixture: Path, node_results: dict[str, Any]) -> None:
        """Node's wire bytes decode in Python to the fixture's JSON."""
        encoded = base64.b64decode(node_results[fixture.name]["binary"])
        decoded = message_class(fixture).FromString(encoded)
        assert same_json(canonical_dict(decoded), json.loads(fixture.read_text("utf-8")))

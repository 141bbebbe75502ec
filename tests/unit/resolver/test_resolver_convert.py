"""The proto side: content references, value round trips, claim lookup, the GC pause."""

from __future__ import annotations

import gc
import hashlib
import re
from typing import Any

import pytest

from assay.protovalues import json_to_value, value_to_json
from assay.services.resolver.adapters.offload import without_gc
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from assay.services.resolver.wire.convert import ClaimIndex, claim_ref
from assay.services.resolver.wire.intake import intake, source_table
from assay.services.resolver.wire.reader import Reader
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as pb
from tests.unit.resolver.resolver_factories import claim, resolve, value

SOURCES = source_table(DEFAULT_POLICY.reliability)


class TestClaimRef:
    def test_id_is_the_reference(self) -> None:
        """A claim with an id is referred to by it."""
        assert claim_ref(claim(id="c-7")) == "c-7"

    def test_content_reference(self) -> None:
        """Without an id: sha256 of the deterministic serialization, 16 hex digits."""
        item = claim("a", source_ref="r")
        digest = hashlib.sha256(item.SerializeToString(deterministic=True)).hexdigest()
        assert claim_ref(item) == "sha256:" + digest[:16]
        assert re.fullmatch(r"sha256:[0-9a-f]{16}", claim_ref(item))

    def test_reference_does_not_depend_on_position(self) -> None:
        """The same claim gets the same reference wherever it sits in the request."""
        item = claim("a", source_ref="r", confidence=0.4)
        first = resolve([item, claim("b", id="x")])
        second = resolve([claim("b", id="x"), item])
        refs = {c.claim_ref for r in (first, second) for v in r.values for c in v.claims}
        assert refs == {"x", claim_ref(item)}

    def test_intake_uses_the_same_reference(self) -> None:
        """Rows carry exactly the reference the API documents."""
        item = claim("a")
        got = intake([item], SOURCES)
        assert got is not None
        (rows,) = got.values[(item.subject, item.predicate)].values()
        assert rows[0][1] == claim_ref(item)


class TestValues:
    @pytest.mark.parametrize(
        "data", ["x", 2.5, True, False, {"a": [1, "b", None, {"c": False}]}, [], {}]
    )
    def test_round_trip(self, data: object) -> None:
        """JSON -> Value -> JSON is the identity."""
        assert value_to_json(value(data)) == data

    @pytest.mark.parametrize(
        ("data", "key"),
        [
            ({}, "{}"),
            ([], "[]"),
            ({"limits": {}}, '{"limits":{}}'),
            ({"tags": [], "n": 1}, '{"n":1,"tags":[]}'),
            ([{}, [[]]], "[{},[[]]]"),
        ],
    )
    def test_empty_objects_and_lists_are_echoed(self, data: Any, key: str) -> None:
        """An empty object or list, top level or nested, is keyed and echoed as itself
        (in ``values[].value`` and ``leader.value``), never as null or an unset Value."""
        resolution = resolve([claim(data)])
        assert resolution.leader.value_key == key
        assert resolution.values[0].value_key == key
        for echoed in (resolution.leader.value, resolution.values[0].value):
            assert value_to_json(echoed) == data
            assert echoed.WhichOneof("kind") == (
                "struct_value" if isinstance(data, dict) else "list_value"
            )
            assert echoed == value(data)

    def test_nested_empty_kinds_are_set(self) -> None:
        """Inside an object, an empty object is a struct_value and an empty list a
        list_value (the oneof is set even with nothing in it)."""
        out = value({"limits": {}, "tags": []})
        fields = out.struct_value.fields
        assert fields["limits"].WhichOneof("kind") == "struct_value"
        assert fields["tags"].WhichOneof("kind") == "list_value"

    def test_null(self) -> None:
        """A null Value reads back as None."""
        out = value(None)
        assert out.WhichOneof("kind") == "null_value"
        json_to_value(None, out)
        assert value_to_json(out) is None


class TestClaimIndex:
    def test_lookup_across_lists(self) -> None:
        """Indexes continue from one list to the next."""
        index = ClaimIndex()
        first = [claim(id="a"), claim(id="b")]
        second = [claim(id="c")]
        assert index.add(first) == 0
        assert index.add(second) == 2
        assert [index[i].id for i in range(3)] == ["a", "b", "c"]
        with pytest.raises(IndexError):
            index[3]

    def test_observed(self) -> None:
        """Observe times are read at intake, in seconds by request-wide index, None when absent."""
        stamped = claim(observed=100)
        stamped.observe_time.nanos = 500_000_000
        request = pb.ResolveHypothesesRequest()
        request.as_of.seconds = 1000
        request.stale_after.seconds = 10
        reader = Reader(DEFAULT_POLICY, source_table(DEFAULT_POLICY.reliability))
        staleness = reader.staleness(request)
        assert staleness is not None
        assert staleness.horizon == 990.0
        reader.base([stamped, claim()], "evidence.claims")
        reader.extra([claim(observed=7)], "hypotheses[0].claims")
        reader.done()
        assert [staleness.observed(i) for i in range(3)] == [100.5, None, 7.0]


class TestGcPause:
    def test_reenabled_after_success_and_failure(self) -> None:
        """The collector is back on after the work, even when the work raises."""
        assert gc.isenabled()
        assert without_gc(lambda _: gc.isenabled(), None) is False
        assert gc.isenabled()
        with pytest.raises(ValueError, match="boom"):
            without_gc(_boom, None)
        assert gc.isenabled()

    def test_leaves_a_disabled_collector_alone(self) -> None:
        """If the caller had it off, it stays off."""
        gc.disable()
        try:
            without_gc(lambda _: None, None)
            assert not gc.isenabled()
        finally:
            gc.enable()


def _boom(_: object) -> None:
    raise ValueError("boom")


def test_evidence_message_is_the_contract() -> None:
    """The factories build real contract messages."""
    assert isinstance(claim(), claim_pb2.Claim)

"""The table's digest, the watched table file, and one table per call."""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from assay.reliability_table import TableError, table_digest
from assay.runtime.logging import configure_logging
from assay.services.resolver.adapters import policy_file
from assay.services.resolver.adapters.policy_file import (
    FixedPolicy,
    Loaded,
    PolicyFile,
    policy_source,
)
from assay.services.resolver.adapters.rpcs import ResolverRpcs
from assay.services.resolver.domain.policy import (
    DEFAULT_POLICY,
    TABLE_ENV,
    Policy,
)
from assay.services.resolver.use_cases.resolve import Resolver
from assay.v1 import resolution_pb2
from assay.v1 import resolver_service_pb2 as pb
from tests.unit.resolver.resolver_factories import SUBJECT, UNSAFE, claim, evidence

# The builtin table's digest: recorded, so a change of the table or of the rule shows here.
BUILTIN_DIGEST = "sha256:a3c04964147c2ac215ddf1e220775f14e73b97fa9268beb1b5e5cffa75bb5ad9"


class Clock:
    """``policy_file``'s clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return 1_760_000_000.0 + self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(policy_file, "time", fake)
    return fake


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("info", stream)
    yield stream
    configure_logging("info")


def lines(stream: io.StringIO, event: str) -> list[dict[str, Any]]:
    found = [json.loads(raw) for raw in stream.getvalue().splitlines() if raw.startswith("{")]
    return [line for line in found if line.get("event") == event]


def write(path: Path, document: object) -> None:
    """Replace the file as an operator should: a new file renamed over the old."""
    fresh = path.with_suffix(".tmp")
    fresh.write_text(document if isinstance(document, str) else json.dumps(document))
    os.replace(fresh, path)


class TestTableDigest:
    def test_builtin_digest_is_the_jcs_sha256_of_the_table(self) -> None:
        """The builtin table's digest is the recorded one, as rfc8785 + SHA-256 compute it."""
        canonical = rfc8785.dumps({"sources": dict(DEFAULT_POLICY.reliability)})
        assert DEFAULT_POLICY.digest == "sha256:" + hashlib.sha256(canonical).hexdigest()
        assert DEFAULT_POLICY.digest == BUILTIN_DIGEST

    @pytest.mark.parametrize(
        "text",
        [
            '{"sources": {"b": 0.5, "a": 1}}',
            '{"sources":{"a":1.0,"b":0.50}}',
            '{"calibration": {"a": {"count": 3}}, "sources": {"b": 5e-1, "a": 1}}',
        ],
    )
    def test_the_content_alone_counts(self, text: str, tmp_path: Path) -> None:
        """Spelling, key order and other members leave the digest unchanged."""
        path = tmp_path / "t.json"
        path.write_text(text)
        assert PolicyFile(str(path)).current().policy.digest == table_digest({"a": 1, "b": 0.5})

    @pytest.mark.parametrize(
        "other", [{"a": 1.0, "b": 0.51}, {"a": 1.0}, {"a": 1.0, "b": 0.5, "c": 0.5}]
    )
    def test_any_entry_changes_it(self, other: dict[str, float]) -> None:
        """A changed, missing or added entry is another table."""
        assert table_digest(other) != table_digest({"a": 1.0, "b": 0.5})

    def test_policy_derives_it(self) -> None:
        """A policy's digest is its table's, whatever its origin."""
        policy = Policy(reliability={"a": 0.25}, origin="x.json")
        assert policy.digest == table_digest({"a": 0.25})
        assert Policy().digest == BUILTIN_DIGEST


class TestPolicyFile:
    def test_a_changed_file_is_read_at_the_next_check(
        self, tmp_path: Path, clock: Clock, logs: io.StringIO
    ) -> None:
        """Not before ``CHECK_SECONDS``; then the new table, with its load time and a log line."""
        path = tmp_path / "table.json"
        write(path, {"sources": {"a": 0.5}})
        watched = PolicyFile(str(path))
        first = watched.current()
        write(path, {"sources": {"a": 0.75}})
        clock.now += policy_file.CHECK_SECONDS / 2
        assert watched.current() is first
        clock.now += policy_file.CHECK_SECONDS
        now = watched.current()
        assert dict(now.policy.reliability) == {"a": 0.75}
        assert now.policy.origin == str(path)
        assert now.load_time > first.load_time
        [line] = lines(logs, "reliability_table_reloaded")
        assert line["path"] == str(path)
        assert (line["old_digest"], line["new_digest"]) == (first.policy.digest, now.policy.digest)

    def test_a_bad_version_keeps_the_table_and_warns_once(
        self, tmp_path: Path, clock: Clock, logs: io.StringIO
    ) -> None:
        """The table in force stays; one warning names the file and entry, not the content;
        a fixed version is read again."""
        path = tmp_path / "table.json"
        write(path, {"sources": {"a": 0.5}})
        watched = PolicyFile(str(path))
        good = watched.current()
        write(path, {"note": "NOT-TO-BE-LOGGED", "sources": {"a": 0.5, "b": 7}})
        for _ in range(3):
            clock.now += policy_file.CHECK_SECONDS
            assert watched.current() is good
        [warning] = lines(logs, "reliability_table_refused")
        assert warning["path"] == str(path)
        assert "sources.b" in warning["why"]
        assert warning["kept"] == good.policy.digest
        assert "NOT-TO-BE-LOGGED" not in logs.getvalue()
        write(path, {"sources": {"a": 0.5, "b": 0.7}})
        clock.now += policy_file.CHECK_SECONDS
        assert dict(watched.current().policy.reliability) == {"a": 0.5, "b": 0.7}

    @pytest.mark.parametrize("broken", ["{", '{"sources": {}}', '{"sources": {"a": NaN}}', None])
    def test_every_kind_of_bad_file_is_refused(
        self, broken: str | None, tmp_path: Path, clock: Clock, logs: io.StringIO
    ) -> None:
        """Not JSON, an empty table, a constant, a file gone: each keeps the table."""
        path = tmp_path / "table.json"
        write(path, {"sources": {"a": 0.5}})
        watched = PolicyFile(str(path))
        good = watched.current()
        if broken is None:
            path.unlink()
        else:
            write(path, broken)
        clock.now += policy_file.CHECK_SECONDS
        assert watched.current() is good
        [warning] = lines(logs, "reliability_table_refused")
        assert str(path) in warning["why"]

    def test_the_same_entries_keep_the_table(
        self, tmp_path: Path, clock: Clock, logs: io.StringIO
    ) -> None:
        """A rewrite with the same entries (another spelling) keeps the table and its time."""
        path = tmp_path / "table.json"
        write(path, {"sources": {"a": 0.5}})
        watched = PolicyFile(str(path))
        first = watched.current()
        write(path, '{\n  "sources": {"a": 5e-1}\n}\n')
        clock.now += policy_file.CHECK_SECONDS
        assert watched.current() is first
        assert not lines(logs, "reliability_table_reloaded")

    def test_a_bad_file_at_start_is_an_error(self, tmp_path: Path) -> None:
        """At start there is no good table to keep: TableError naming the file."""
        path = tmp_path / "bad.json"
        path.write_text('{"sources": {"a": 2}}')
        with pytest.raises(TableError, match=r"bad\.json: sources\.a"):
            PolicyFile(str(path))

    def test_source_chosen_like_load_policy(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """No path and no environment: the builtin table, fixed; else the file, watched."""
        monkeypatch.delenv(TABLE_ENV, raising=False)
        fixed = policy_source(None)
        assert isinstance(fixed, FixedPolicy)
        assert fixed.current().policy is DEFAULT_POLICY
        path = tmp_path / "env.json"
        path.write_text('{"sources": {"x": 0.1}}')
        monkeypatch.setenv(TABLE_ENV, str(path))
        watched = policy_source(None)
        assert isinstance(watched, PolicyFile)
        assert watched.path == str(path)


class Flipping:
    """A source whose table changes at every look: what a call takes once must last."""

    def __init__(self) -> None:
        self.tables = [
            Loaded(Policy(reliability={**DEFAULT_POLICY.reliability, "api_spec": r}), 0.0)
            for r in (0.8, 0.99)
        ]
        self.looks = 0

    def current(self) -> Loaded:
        self.looks += 1
        return self.tables[self.looks % 2]


class TestOneTablePerCall:
    def test_every_resolution_of_a_call_names_the_table_it_took(self) -> None:
        """Each call looks once; all its resolutions (base, hypotheses, before and after)
        name that table and follow its reliabilities, and the next call takes the next."""
        source = Flipping()
        rpcs = ResolverRpcs(Resolver(DEFAULT_POLICY), policies=source)
        base = [
            claim("key", id="a", predicate=UNSAFE, source="api_spec"),
            claim("none", id="b", predicate=UNSAFE, source="documentation"),
        ]
        request = pb.ResolveHypothesesRequest(
            evidence=evidence(base), subject=SUBJECT, predicate=UNSAFE
        )
        request.hypotheses.add(label="same", claims=[])
        reconcile = pb.ReconcileRequest(
            evidence=evidence(base),
            proposals=[claim("none", id="p", predicate=UNSAFE, source="ci_status")],
        )
        seen = []
        for _ in range(2):
            looks = source.looks
            answer = rpcs.resolve_hypotheses(request)
            assert source.looks == looks + 1
            [same] = answer.hypotheses
            assert same.resolution.reliability_table_digest == answer.base.reliability_table_digest
            assert same.resolution.status == answer.base.status
            seen.append((answer.base.reliability_table_digest, answer.base.status))
        status_under = dict(seen)
        assert len(status_under) == 2
        low, high = (t.policy.digest for t in source.tables)
        # 0.9 x 0.8 against 0.9 x 0.6 is within the margin; 0.9 x 0.99 is not.
        assert status_under[low] == resolution_pb2.RESOLUTION_STATUS_CONFLICTED
        assert status_under[high] == resolution_pb2.RESOLUTION_STATUS_RESOLVED
        for _ in range(2):
            [outcome] = rpcs.reconcile(reconcile).outcomes
            assert outcome.before.reliability_table_digest == outcome.after.reliability_table_digest
            seen.append((outcome.before.reliability_table_digest, outcome.before.status))
        assert len({digest for digest, _ in seen[2:]}) == 2

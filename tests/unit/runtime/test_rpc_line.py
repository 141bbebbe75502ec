"""The line of a successful RPC is formatted directly (``RpcLog.ok``) when nothing else joins
it; that shortcut must write exactly what the general renderer writes, and step aside for
whatever it does not handle (bound context variables, trace ids, fields to cut)."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from assay.runtime.logging import MAX_FIELD_CHARS, configure_logging, rpc_line

NOW_NS = 1_767_225_600_123_456_789  # 2026-01-01T00:00:00.123456Z


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both paths read the same instant, so their lines can be compared byte for byte."""
    monkeypatch.setattr(time, "time_ns", lambda: NOW_NS)


@pytest.fixture
def clean_context() -> Iterator[None]:
    structlog.contextvars.clear_contextvars()
    yield
    structlog.contextvars.clear_contextvars()


def via_ok(*args: Any) -> str:
    out = io.StringIO()
    configure_logging("info", out)
    rpc_line().ok(*args)
    return out.getvalue()


def via_fields(fields: dict[str, Any]) -> str:
    out = io.StringIO()
    configure_logging("info", out)
    rpc_line().info(fields)
    return out.getvalue()


def general(method: str, duration_ms: float, request_id: str, peer: str, caller: str | None) -> str:
    fields: dict[str, Any] = {
        "method": method,
        "code": "OK",
        "duration_ms": duration_ms,
        "request_id": request_id,
        "peer": peer,
    }
    if caller is not None:
        fields["caller"] = caller
    return via_fields(fields)


CASES = [
    ("/assay.v1.ResolverService/GetResolverPolicy", 0.123, "0" * 32, "ipv4:127.0.0.1:4567", None),
    ("/m", 12.0, 'quo"te\\back\nnew\u00e9\u2603\U0001f600', "ipv6:[::1]:5", "spiffe://a/\u00e9"),
    ("/m", 1e-05, "", "", ""),
    ("/m", 123456789.125, "r" * 128, "unix:/tmp/s", "svc"),
]


@pytest.mark.usefixtures("clean_context")
class TestOkLine:
    @pytest.mark.parametrize("args", CASES)
    def test_same_bytes_as_the_general_renderer(self, args: tuple[Any, ...]) -> None:
        """Escapes (quotes, backslashes, newlines, non-ASCII), an empty or absent caller,
        and floats large and small come out exactly as the JSON encoder writes them."""
        line = via_ok(*args)
        assert line == general(*args)
        parsed = json.loads(line)
        assert parsed["event"] == "rpc"
        assert parsed["timestamp"] == "2026-01-01T00:00:00.123456Z"
        assert ("caller" in parsed) == (args[4] is not None)

    def test_a_long_line_is_bounded_like_any_other(self) -> None:
        """A peer long enough to push the line past the bound takes the general path,
        which cuts it."""
        args = ("/m", 1.0, "id", "p" * (4 * MAX_FIELD_CHARS), None)
        line = via_ok(*args)
        assert line == general(*args)
        assert "chars cut" in json.loads(line)["peer"]

    def test_bound_context_variables_join_the_line(self) -> None:
        """With a context variable bound, the line carries it, as the general path does."""
        structlog.contextvars.bind_contextvars(tenant="t1", method="not this")
        args = CASES[0]
        line = via_ok(*args)
        assert line == general(*args)
        parsed = json.loads(line)
        assert parsed["tenant"] == "t1"
        assert parsed["method"] == args[0]  # a field wins over a bound variable

    def test_nothing_below_info(self) -> None:
        out = io.StringIO()
        configure_logging("warning", out)
        rpc_line().ok(*CASES[0])
        assert out.getvalue() == ""

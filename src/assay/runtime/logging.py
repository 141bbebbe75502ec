"""structlog set up for one JSON object per line on stderr.

Every RPC produces exactly one line (``handlers``); start-up and shutdown a few more. With
tracing on (``tracing``), a line written inside a span carries its ``trace_id`` and ``span_id``.

The per-RPC line is on every call's path, so it is kept short: the timestamp's date and time
of day are formatted once per second, one JSON encoder is built once, and ``RpcLog`` renders
RPC lines without the ``BoundLogger`` dispatch. ``configure_logging`` rebuilds ``RpcLog``, so
a later call (tests make one per test) redirects RPC lines too.

No line grows with the input: every string is cut to ``MAX_FIELD_CHARS`` (a traceback to
``MAX_TRACEBACK_CHARS``) around a marker saying how much was cut, once, at rendering
(``_render``). No line carries a raw control, bidi or format character: ``ensure_ascii`` and
``RpcLog.ok``'s ``_json_str`` write everything outside printable ASCII as a ``\\u`` escape, a
superset of what ``assay.safe_text`` escapes on a terminal. Keep them so.
"""

from __future__ import annotations

import itertools
import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol, TextIO

import structlog
from structlog.typing import EventDict, FilteringBoundLogger, WrappedLogger


def _fallback(value: Any) -> Any:
    """What structlog's own renderer does with a value JSON cannot hold."""
    try:
        return value.__structlog__()
    except AttributeError:
        return repr(value)


_ENCODER = json.JSONEncoder(sort_keys=True, default=_fallback)
# What _ENCODER (ensure_ascii, the default) writes for a str, quotes included.
_json_str: Callable[[str], str] = json.encoder.encode_basestring_ascii

MAX_FIELD_CHARS = 512
MAX_TRACEBACK_CHARS = 4096
MAX_FIELD_ITEMS = 16
_MAX_DEPTH = 4
_TRACEBACK_FIELDS = frozenset({"exception"})  # what format_exc_info writes


def _cut(text: str, limit: int) -> str:
    """``text``, or its first and last ``limit // 2`` characters around a marker."""
    if len(text) <= limit:
        return text
    keep = limit // 2
    return f"{text[:keep]}…[{len(text) - 2 * keep} chars cut]…{text[-keep:]}"


def _bounded(value: Any, limit: int = MAX_FIELD_CHARS, depth: int = 0) -> Any:
    """``value`` with every string cut to ``limit`` and every container to
    ``MAX_FIELD_ITEMS`` entries; what JSON cannot hold becomes its cut ``repr``."""
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):  # 1024 bits: at most 309 digits
        return value if value.bit_length() <= 1024 else f"<int of {value.bit_length()} bits>"
    if isinstance(value, str):
        return _cut(value, limit)
    if depth < _MAX_DEPTH and isinstance(value, dict):
        items = list(itertools.islice(value.items(), MAX_FIELD_ITEMS))
        bounded = {_cut(str(k), limit): _bounded(v, limit, depth + 1) for k, v in items}
        if len(value) > len(items):
            bounded["…"] = f"{len(value) - len(items)} more entries cut"
        return bounded
    if depth < _MAX_DEPTH and isinstance(value, (list, tuple, set, frozenset)):
        shown = [_bounded(v, limit, depth + 1) for v in itertools.islice(value, MAX_FIELD_ITEMS)]
        if len(value) > len(shown):
            shown.append(f"…[{len(value) - len(shown)} more items cut]")
        return shown
    return _cut(str(_fallback(value)), limit)


def bounded_fields(event_dict: EventDict) -> EventDict:
    """The event with every field bounded (see the module docstring)."""
    return {
        key: _bounded(value, MAX_TRACEBACK_CHARS if key in _TRACEBACK_FIELDS else MAX_FIELD_CHARS)
        for key, value in event_dict.items()
    }


def _dumps(event_dict: EventDict, **_: Any) -> str:
    return _ENCODER.encode(event_dict)


def _render(logger: WrappedLogger, name: str, event_dict: EventDict) -> str:
    """The JSON line, with every field bounded. Renders once; only a line long enough to
    hold a field over ``MAX_FIELD_CHARS`` is rendered again, from ``bounded_fields``."""
    try:
        line = _dumps(event_dict)
    except ValueError:  # a circular list, an int past str()'s limit: bounding fixes both
        line = ""
    if line and len(line) <= MAX_FIELD_CHARS:
        return line
    return _dumps(bounded_fields(event_dict))


class _UtcTimestamp:
    """ISO 8601 UTC with microseconds (``2026-01-01T12:00:00.123456Z``), as
    ``TimeStamper(fmt="iso", utc=True)`` writes it, without a ``datetime`` per line."""

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def now(self) -> str:
        second, nanos = divmod(time.time_ns(), 1_000_000_000)
        if second != self._second:
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second
        return f"{self._prefix}.{nanos // 1000:06d}Z"

    def __call__(self, logger: WrappedLogger, name: str, event_dict: EventDict) -> EventDict:
        event_dict["timestamp"] = self.now()
        return event_dict


class RpcLine(Protocol):
    """Where the handlers send the one line per RPC (event ``rpc``)."""

    def info(self, fields: dict[str, Any]) -> None: ...

    def warning(self, fields: dict[str, Any]) -> None: ...

    def ok(
        self, method: str, duration_ms: float, request_id: str, peer: str, caller: str | None
    ) -> None:
        """The line of a call that succeeded: ``info`` of these fields (``caller`` if not
        None), written the same way."""


class RpcLog:
    """Writes RPC lines exactly as the configured chain renders them, minus its dispatch.

    The line is the same JSON object any other line is (``event``, ``level``, the
    ``timestamp``, bound context variables, the fields), rendered (bounded) by the
    chain's renderer and written by its ``WriteLogger``; skipped are only the
    ``BoundLogger`` layers (method lookup, context copy, the exception processor,
    which an RPC line never needs).
    """

    def __init__(self, level: int, stream: TextIO) -> None:
        self.info_enabled = level <= logging.INFO
        self.warning_enabled = level <= logging.WARNING
        self._logger = structlog.WriteLogger(stream)
        self._stamp = _UtcTimestamp()

    def info(self, fields: dict[str, Any]) -> None:
        if self.info_enabled:
            self._write("info", fields)

    def warning(self, fields: dict[str, Any]) -> None:
        if self.warning_enabled:
            self._write("warning", fields)

    def ok(
        self, method: str, duration_ms: float, request_id: str, peer: str, caller: str | None
    ) -> None:
        """The common line (see ``RpcLine.ok``), formatted directly when nothing else joins
        it: no bound context variable, no trace ids, no field to cut. That is the line
        ``_render`` would write, byte for byte (keys sorted, strings escaped by the same
        function as the encoder's, the float by its ``repr`` as the encoder does), and about
        a third of its cost; anything else takes the general path."""
        if not self.info_enabled:
            return
        if not _STATE.trace_ids:
            bound: EventDict = {}
            structlog.contextvars.merge_contextvars(self._logger, "info", bound)
            if not bound:
                who = "" if caller is None else f'"caller": {_json_str(caller)}, '
                line = (
                    f'{{{who}"code": "OK", "duration_ms": {duration_ms!r}, "event": "rpc", '
                    f'"level": "info", "method": {_json_str(method)}, "peer": {_json_str(peer)}, '
                    f'"request_id": {_json_str(request_id)}, "timestamp": "{self._stamp.now()}"}}'
                )
                if len(line) <= MAX_FIELD_CHARS:
                    self._logger.msg(line)
                    return
        self._write("info", _ok_fields(method, duration_ms, request_id, peer, caller))

    def _write(self, level: str, fields: dict[str, Any]) -> None:
        fields["event"] = "rpc"
        fields["level"] = level
        structlog.contextvars.merge_contextvars(self._logger, level, fields)
        if _STATE.trace_ids:
            add_trace_ids(self._logger, level, fields)
        self._stamp(self._logger, level, fields)
        self._logger.msg(_render(self._logger, level, fields))


class _StructlogRpcLine:
    """Before ``configure_logging`` has run: whatever structlog is configured to do."""

    def info(self, fields: dict[str, Any]) -> None:
        get_logger("assay.rpc").info("rpc", **fields)

    def warning(self, fields: dict[str, Any]) -> None:
        get_logger("assay.rpc").warning("rpc", **fields)

    def ok(
        self, method: str, duration_ms: float, request_id: str, peer: str, caller: str | None
    ) -> None:
        self.info(_ok_fields(method, duration_ms, request_id, peer, caller))


def _ok_fields(
    method: str, duration_ms: float, request_id: str, peer: str, caller: str | None
) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "method": method,
        "code": "OK",
        "duration_ms": duration_ms,
        "request_id": request_id,
        "peer": peer,
    }
    if caller is not None:
        fields["caller"] = caller
    return fields


def _no_span() -> Any:
    return None


class _State:
    rpc: RpcLine = _StructlogRpcLine()
    trace_ids = False  # whether tracing is on (``tracing.install``)
    current_span: Callable[[], Any] = _no_span


_STATE = _State()


def set_trace_ids(on: bool) -> None:
    """Whether lines carry the active span's ids (``tracing`` turns it on with tracing)."""
    if on:  # OpenTelemetry is imported only once tracing is on
        from opentelemetry import trace

        _STATE.current_span = trace.get_current_span
    _STATE.trace_ids = on


def add_trace_ids(logger: WrappedLogger, name: str, event_dict: EventDict) -> EventDict:
    """``trace_id`` and ``span_id`` (hex, as trace backends show them) of the span active
    where the line is written, when tracing is on and a span is active: a line is found
    from its trace and a trace from its lines."""
    if _STATE.trace_ids:
        context = _STATE.current_span().get_span_context()
        if context.is_valid:
            event_dict["trace_id"] = format(context.trace_id, "032x")
            event_dict["span_id"] = format(context.span_id, "016x")
    return event_dict


def configure_logging(level: str = "info", stream: TextIO | None = None) -> None:
    """Route structlog to ``stream`` (default stderr) as JSON lines with an ISO timestamp."""
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    target = stream or sys.stderr  # resolved now: a later configure_logging redirects
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            add_trace_ids,
            structlog.processors.add_log_level,
            _UtcTimestamp(),
            structlog.processors.format_exc_info,
            _render,  # JSON, bounded
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.WriteLoggerFactory(file=target),
        cache_logger_on_first_use=False,
    )
    _STATE.rpc = RpcLog(numeric, target)


def get_logger(name: str) -> FilteringBoundLogger:
    logger: FilteringBoundLogger = structlog.get_logger(name)
    return logger


def rpc_line() -> RpcLine:
    """The writer of per-RPC lines for the current configuration."""
    return _STATE.rpc

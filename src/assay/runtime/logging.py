"""structlog set up for one JSON object per line on stderr.

Every RPC produces exactly one line (see ``handlers``); start-up and shutdown
produce a few more. JSON keeps the lines machine-readable for whatever ships them.

The per-RPC line is written on every call, so its path is kept short (measured
on the 2-core benchmark machine: about 6 us per line through a pre-bound
logger, 9 us through a lazy proxy with the stock ``TimeStamper`` and
``json.dumps``, 4 us as below): the timestamp's date and time of day are
formatted once per second, one JSON encoder is built once, ``WriteLogger``
writes, and ``RpcLog`` renders RPC lines without the ``BoundLogger`` dispatch.
``configure_logging`` rebuilds ``RpcLog``, so a later call (tests make one per
test) redirects RPC lines too.
"""

from __future__ import annotations

import json
import logging
import sys
import time
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


def _dumps(event_dict: EventDict, **_: Any) -> str:
    return _ENCODER.encode(event_dict)


class _UtcTimestamp:
    """ISO 8601 UTC with microseconds (``2026-01-01T12:00:00.123456Z``), as
    ``TimeStamper(fmt="iso", utc=True)`` writes it, without a ``datetime`` per line."""

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def __call__(self, logger: WrappedLogger, name: str, event_dict: EventDict) -> EventDict:
        second, nanos = divmod(time.time_ns(), 1_000_000_000)
        if second != self._second:
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second
        event_dict["timestamp"] = f"{self._prefix}.{nanos // 1000:06d}Z"
        return event_dict


class RpcLine(Protocol):
    """Where the handlers send the one line per RPC (event ``rpc``)."""

    def info(self, fields: dict[str, Any]) -> None: ...

    def warning(self, fields: dict[str, Any]) -> None: ...


class RpcLog:
    """Writes RPC lines exactly as the configured chain renders them, minus its dispatch.

    The line is the same JSON object any other line is (``event``, ``level``, the
    ``timestamp``, bound context variables, the fields), rendered by the chain's
    ``JSONRenderer`` and written by its ``WriteLogger``; skipped are only the
    ``BoundLogger`` layers (method lookup, context copy, the exception processor,
    which an RPC line never needs).
    """

    def __init__(self, level: int, stream: TextIO) -> None:
        self.info_enabled = level <= logging.INFO
        self.warning_enabled = level <= logging.WARNING
        self._logger = structlog.WriteLogger(stream)
        self._stamp = _UtcTimestamp()
        self._render = structlog.processors.JSONRenderer(serializer=_dumps)

    def info(self, fields: dict[str, Any]) -> None:
        if self.info_enabled:
            self._write("info", fields)

    def warning(self, fields: dict[str, Any]) -> None:
        if self.warning_enabled:
            self._write("warning", fields)

    def _write(self, level: str, fields: dict[str, Any]) -> None:
        fields["event"] = "rpc"
        fields["level"] = level
        structlog.contextvars.merge_contextvars(self._logger, level, fields)
        self._stamp(self._logger, level, fields)
        line = self._render(self._logger, level, fields)
        self._logger.msg(line if isinstance(line, str) else bytes(line).decode())


class _StructlogRpcLine:
    """Before ``configure_logging`` has run: whatever structlog is configured to do."""

    def info(self, fields: dict[str, Any]) -> None:
        get_logger("assay.rpc").info("rpc", **fields)

    def warning(self, fields: dict[str, Any]) -> None:
        get_logger("assay.rpc").warning("rpc", **fields)


class _State:
    rpc: RpcLine = _StructlogRpcLine()


_STATE = _State()


def configure_logging(level: str = "info", stream: TextIO | None = None) -> None:
    """Route structlog to ``stream`` (default stderr) as JSON lines with an ISO timestamp."""
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    target = stream or sys.stderr  # resolved now: a later configure_logging redirects
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            _UtcTimestamp(),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(serializer=_dumps),
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

"""OpenTelemetry tracing of the services' RPCs, off unless the ``OTEL_*`` environment asks for it.

On when ``OTEL_TRACES_EXPORTER`` names an exporter (``otlp`` or ``console``) or an OTLP
endpoint is set; ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` keep it off;
the SDK reads the other ``OTEL_*`` settings itself, nothing here re-implements them. When on,
every server gets ``opentelemetry-instrumentation-grpc``'s server interceptor and the
planner's channel to the resolver its client interceptors, which send the W3C
``traceparent``: a plan is one trace, its resolver calls children of its span. Only
``assay.*`` services are traced (health checks and reflection would drown the traces); when
off there is no interceptor at all, so an untraced call costs nothing.

Tracing is process-wide, as the environment that configures it is: ``install`` makes a
``TracerProvider`` the one later servers and channels use (tests install one with an
in-memory exporter), ``uninstall`` flushes and forgets it. Log lines then carry the active
span's ``trace_id`` and ``span_id`` (``logging.add_trace_ids``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import grpc

from assay.runtime import logging as assay_logging

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

# The SDK and the instrumentation are imported where they are used, once tracing is on: off,
# the default, they would add a fifth of a second to every `assay` command's start.

_EXPORTERS = ("otlp", "console")
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_TRACED_PREFIX = "assay."


class _State:
    provider: TracerProvider | None = None


_STATE = _State()


def exporter_from_env() -> str | None:
    """The exporter the environment asks for (``otlp``, ``console``), or None: tracing off.

    An OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``…_TRACES_ENDPOINT``) asks for
    ``otlp``. The OTLP exporter (gRPC) reads its own ``OTEL_EXPORTER_OTLP_*`` settings, the
    batch processor ``OTEL_BSP_*``, the sampler ``OTEL_TRACES_SAMPLER``, the resource
    ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``.

    ``SystemExit`` for an exporter this build does not ship (one line, at start)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    named = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if named == "none":
        return None
    if not named:
        return "otlp" if any(os.environ.get(name) for name in _ENDPOINTS) else None
    if named not in _EXPORTERS:
        raise SystemExit(
            f"OTEL_TRACES_EXPORTER={named!r}: this build exports traces to "
            f"{' or '.join(_EXPORTERS)} (or none)"
        )
    return named


def _exporter(name: str) -> SpanExporter:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()  # endpoint, headers, TLS: OTEL_EXPORTER_OTLP_*


def configure_from_env(service_name: str) -> bool:
    """Install a provider exporting as the environment says; whether tracing is on.

    ``service_name`` is the resource's ``service.name`` unless ``OTEL_SERVICE_NAME`` (or
    ``OTEL_RESOURCE_ATTRIBUTES``) names one."""
    name = exporter_from_env()
    if name is None:
        return False
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    resource = Resource.create({} if named else {SERVICE_NAME: service_name})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(_exporter(name)))
    install(provider)
    return True


def install(provider: TracerProvider) -> None:
    """Trace the servers and channels created from now on through ``provider``."""
    _STATE.provider = provider
    assay_logging.set_trace_ids(True)


def uninstall() -> None:
    """Flush and drop the installed provider: later servers and channels are not traced."""
    provider, _STATE.provider = _STATE.provider, None
    assay_logging.set_trace_ids(False)
    if provider is not None:
        provider.shutdown()


def enabled() -> bool:
    return _STATE.provider is not None


def server_interceptors() -> Sequence[grpc.aio.ServerInterceptor]:
    """For ``grpc.aio.server(interceptors=...)``: none when tracing is off."""
    provider = _STATE.provider
    if provider is None:
        return ()
    from opentelemetry.instrumentation.grpc import aio_server_interceptor
    from opentelemetry.instrumentation.grpc.filters import service_prefix

    interceptor: grpc.aio.ServerInterceptor = aio_server_interceptor(  # type: ignore[no-untyped-call]
        tracer_provider=provider, filter_=service_prefix(_TRACED_PREFIX)
    )
    return (interceptor,)


def client_interceptors() -> Sequence[Any]:
    """For ``grpc.aio.*_channel(interceptors=...)``: none when tracing is off."""
    provider = _STATE.provider
    if provider is None:
        return ()
    from opentelemetry.instrumentation.grpc import aio_client_interceptors
    from opentelemetry.instrumentation.grpc.filters import service_prefix

    interceptors: list[Any] = aio_client_interceptors(  # type: ignore[no-untyped-call]
        tracer_provider=provider, filter_=service_prefix(_TRACED_PREFIX)
    )
    return interceptors

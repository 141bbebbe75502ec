"""What the trust boundary costs per call: TLS, and a verified bearer token, against dev mode.

Not a test: a script (``just bench`` / ``python bench/auth.py``) that prints, from one run,

1. the gate alone, in-process: admitting a call that carries a bearer token (ES256 JWT
   checked against a JWKS, mapped through the policy) with the verified-token cache and
   with it turned off (every call a full signature check), next to a dev-mode admission;
2. ``GetResolverPolicy`` RPC throughput (the shared runtime, almost no servicer work) on
   one resolver process serving three ports: plaintext dev mode (the baseline), TLS in dev
   mode, and TLS with authentication on (the same token on every call, as a client sends
   it). Reported as calls/s and as ratios against the plaintext baseline of the same run.

Timings are the best of several interleaved repeats on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import tempfile
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection
from pathlib import Path

import grpc
from harness import best_of, best_rates

from assay.runtime.auth import access_rule
from assay.runtime.auth.dev_credentials import DevCredentials, write_dev_credentials
from assay.runtime.auth.gate import DEV_GATE, Gate
from assay.v1 import resolver_service_pb2, resolver_service_pb2_grpc

METHOD = resolver_service_pb2.DESCRIPTOR.services_by_name["ResolverService"].methods_by_name[
    "GetResolverPolicy"
]


def bench_gate(creds: DevCredentials, quick: bool) -> None:
    rule = access_rule(METHOD)
    gate = Gate.from_files(creds.policy, creds.jwks, client_certificates=False)
    metadata = [("authorization", f"Bearer {creds.token('alice')}")]
    inner = 300 if quick else 2000
    dev = best_of(lambda: DEV_GATE.admit(rule, metadata, {}), 5, inner)
    cached = best_of(lambda: gate.admit(rule, metadata, {}), 5, inner)
    verifier = gate.verifier
    assert verifier is not None

    def forgetting() -> object:  # every call a full check: the cost the cache saves
        verifier.forget_verified()
        return gate.admit(rule, metadata, {})

    full = best_of(forgetting, 5, inner)
    print("Admission of one call, in-process (best of 5)")
    print(f"  dev mode (nothing to check)           {dev * 1e6:>8.2f} us")
    print(f"  bearer ES256 JWT, remembered          {cached * 1e6:>8.2f} us")
    print(f"  bearer ES256 JWT, full check          {full * 1e6:>8.2f} us")
    print(f"  full check / remembered               {full / cached:>8.1f}x")


def _serve(conn: Connection, creds_dir: str) -> None:
    """Child process: one resolver on three ports (plaintext dev, TLS dev, TLS + auth)."""
    from assay.runtime import loop
    from assay.runtime.config import ServerConfig
    from assay.runtime.gc_tuning import tune_for_serving
    from assay.runtime.logging import configure_logging
    from assay.runtime.security import Security
    from assay.runtime.server import start, stop
    from assay.services.registry import ServeOptions
    from assay.services.resolver.service import build_spec

    configure_logging("info", open(os.devnull, "w"))  # noqa: SIM115 - the log line is part of it
    secure = Security.from_credentials(Path(creds_dir))
    configs = {
        "plaintext, dev mode": ServerConfig(),
        "TLS, dev mode": ServerConfig(tls=secure.tls),
        "TLS + bearer JWT": ServerConfig(tls=secure.tls, gate=secure.gate),
    }

    async def main() -> None:
        running = []
        for config in configs.values():
            spec = await build_spec(ServeOptions(port=0))
            running += await start([spec], config)
        tune_for_serving()
        conn.send({name: r.port for name, r in zip(configs, running, strict=True)})
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)
        await stop(running, grace=0)

    loop.run(main(), "auto")


async def bench_rpc(
    ports: dict[str, int], creds: DevCredentials, seconds: float, concurrency: int
) -> None:
    request = resolver_service_pb2.GetResolverPolicyRequest()
    trust = grpc.ssl_channel_credentials(creds.ca.read_bytes())
    token = (("authorization", f"Bearer {creds.token('alice')}"),)
    channels = {
        name: grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        if name.startswith("plaintext")
        else grpc.aio.secure_channel(f"localhost:{port}", trust)
        for name, port in ports.items()
    }

    def caller(
        stub: resolver_service_pb2_grpc.ResolverServiceStub, metadata: tuple[tuple[str, str], ...]
    ) -> Callable[[], Awaitable[object]]:
        return lambda: stub.GetResolverPolicy(request, timeout=10, metadata=metadata)

    calls = {
        name: caller(
            resolver_service_pb2_grpc.ResolverServiceStub(channel),
            token if "JWT" in name else (),
        )
        for name, channel in channels.items()
    }
    try:
        for call in calls.values():
            await call()  # each must succeed before it is timed
        best = await best_rates(calls, concurrency, seconds)
    finally:
        for channel in channels.values():
            await channel.close()
    baseline = best["plaintext, dev mode"]
    print()
    print(f"GetResolverPolicy, {concurrency} concurrent clients, server in its own process")
    for name, rate in best.items():
        print(f"  {name:<24} {rate:>9,.0f} calls/s  {rate / baseline:>5.2f}x of plaintext dev")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="shorter runs (a smoke check)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        creds = write_dev_credentials(Path(folder) / "creds")
        bench_gate(creds, args.quick)
        parent, child = multiprocessing.Pipe()
        server = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(child, str(creds.root))
        )
        server.start()
        try:
            ports = parent.recv()
            asyncio.run(bench_rpc(ports, creds, 0.5 if args.quick else 2.0, 32))
        finally:
            parent.send("stop")
            server.join(timeout=15)
            if server.is_alive():
                server.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

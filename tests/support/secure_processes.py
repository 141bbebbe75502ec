"""The three services as real ``assay serve NAME --credentials DIR`` processes (TLS, bearer
tokens, the auth policy), for the external-tool tier (grpcurl, Node) on the secure path: what
a user gets from ``assay dev-credentials DIR`` and ``assay up --credentials DIR``, on free
loopback ports with a throwaway database.

A server started with ``--tls-client-ca`` also requires a client certificate;
``client_certificate`` issues one from the folder's CA.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from grpc_health.v1 import health_pb2, health_pb2_grpc

from assay.runtime.auth.dev_credentials import DevCredentials, make_leaf
from tests.support.processes import (
    STARTUP_TIMEOUT_SECONDS,
    AssayProcess,
    assay_command,
    free_port,
)
from tests.support.stack import Stack

CLIENT_CERTIFICATE_LIFETIME = dt.timedelta(days=1)


def client_certificate(creds: DevCredentials, name: str) -> tuple[Path, Path]:
    """A client certificate with CN ``name`` signed by the folder's CA, and its key
    (``DIR/clients/NAME.pem``, ``DIR/clients/NAME-key.pem``, the key owner-only)."""
    ca_cert = x509.load_pem_x509_certificate(creds.ca.read_bytes())
    ca_key = serialization.load_pem_private_key(creds.ca_key.read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    now = dt.datetime.now(dt.UTC)
    key, cert = make_leaf(ca_key, ca_cert, name, now, CLIENT_CERTIFICATE_LIFETIME, client=True)
    folder = creds.root / "clients"
    folder.mkdir(mode=0o700, exist_ok=True)
    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return cert_path, key_path


def wait_serving_tls(
    target: str,
    credentials: grpc.ChannelCredentials,
    process: subprocess.Popen[bytes],
    timeout: float = STARTUP_TIMEOUT_SECONDS,
) -> None:
    """Block until the TLS server at ``target`` reports SERVING (health needs no token), or
    fail after ``timeout`` or as soon as ``process`` exits."""
    deadline = time.monotonic() + timeout
    with grpc.secure_channel(target, credentials) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            if process.poll() is not None:
                raise RuntimeError(f"server for {target} exited with {process.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{target} did not become SERVING over TLS within {timeout}s")
            time.sleep(0.1)


@contextmanager
def secure_assay_process(
    args: Sequence[str],
    log_path: Path,
    port: int,
    credentials: grpc.ChannelCredentials,
) -> Iterator[AssayProcess]:
    """Run ``assay ARGS`` (a TLS server on ``port``) until the block ends; ``credentials``
    are what the readiness check connects with. A failed start shows the log."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(assay_command(*args), stdout=subprocess.DEVNULL, stderr=log)
    running = AssayProcess(process, f"127.0.0.1:{port}", log_path)
    try:
        try:
            wait_serving_tls(running.target, credentials, process)
        except (RuntimeError, TimeoutError) as error:
            text = log_path.read_text(encoding="utf-8", errors="replace")
            raise RuntimeError(
                f"`assay {' '.join(args)}` did not start: {error}\n{text[-4000:]}"
            ) from None
        yield running
    finally:
        with suppress(subprocess.TimeoutExpired):
            running.terminate()
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


@contextmanager
def secure_assay_stack(directory: Path, creds: DevCredentials) -> Iterator[Stack]:
    """Resolver, planner (calling the resolver as ``planner`` over TLS) and adjudication
    (fixture reviewers allowed, database in ``directory``), each ``--credentials`` the folder;
    stopped in reverse order when the block ends."""
    trust = grpc.ssl_channel_credentials(creds.ca.read_bytes())
    common = ["--credentials", str(creds.root)]
    with ExitStack() as stack:
        resolver_port = free_port()
        resolver = stack.enter_context(
            secure_assay_process(
                ["serve", "resolver", "--port", str(resolver_port), *common],
                directory / "resolver.log",
                resolver_port,
                trust,
            )
        )
        planner_port = free_port()
        planner = stack.enter_context(
            secure_assay_process(
                [
                    "serve",
                    "planner",
                    "--port",
                    str(planner_port),
                    "--resolver",
                    resolver.target,
                    *common,
                ],
                directory / "planner.log",
                planner_port,
                trust,
            )
        )
        adjudication_port = free_port()
        adjudication = stack.enter_context(
            secure_assay_process(
                [
                    "serve",
                    "adjudication",
                    "--port",
                    str(adjudication_port),
                    "--db",
                    str(directory / "assay.db"),
                    "--allow-fixture-reviewers",
                    *common,
                ],
                directory / "adjudication.log",
                adjudication_port,
                trust,
            )
        )
        yield Stack(resolver, planner, adjudication)


# The CN of the client certificate the mutual TLS tests present, and what the policy grants it.
CERTIFICATE_SUBJECT = "reader-bot"
CERTIFICATE_GRANT = f"""
[[principals]]
issuer = "x509"
subject = "{CERTIFICATE_SUBJECT}"
roles = ["reader"]
tenants = []
"""


@contextmanager
def mutual_tls_resolver(
    directory: Path, creds: DevCredentials, client: tuple[Path, Path]
) -> Iterator[AssayProcess]:
    """A resolver that requires a client certificate of the folder's CA and still accepts
    bearer tokens. Its policy is the folder's plus a grant for the certificate with CN
    ``CERTIFICATE_SUBJECT`` (issuer ``x509``: a certificate's CN never matches a token
    subject's entry)."""
    cert, key = client
    policy = creds.root / "policy-mtls.toml"
    policy.write_text(creds.policy.read_text(encoding="utf-8") + CERTIFICATE_GRANT)
    trust = grpc.ssl_channel_credentials(
        creds.ca.read_bytes(), private_key=key.read_bytes(), certificate_chain=cert.read_bytes()
    )
    port = free_port()
    args = ["serve", "resolver", "--port", str(port), "--credentials", str(creds.root)]
    args += ["--tls-client-ca", str(creds.ca), "--auth-policy", str(policy)]
    with secure_assay_process(args, directory / "mtls-resolver.log", port, trust) as running:
        yield running

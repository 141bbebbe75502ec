"""Serving securely as users run it: real ``assay`` processes, real TLS, real tokens.

``assay dev-credentials`` writes a folder owner-only; ``assay up --credentials``
serves TLS with bearer tokens (the planner calling the resolver as ``planner``);
``assay serve resolver`` with a client CA requires a client certificate; and a
set of flags that cannot work, or that would expose a plaintext or
unauthenticated server off loopback, stops in one line before anything binds.
No test here starts a server on a non-loopback address.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path

import grpc
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from google.protobuf import json_format

from assay.runtime.auth.dev_credentials import (
    EXAMPLE_PRINCIPALS,
    DevCredentials,
    make_ca,
    make_leaf,
    write_dev_credentials,
)
from assay.runtime.status import decode_rpc_error
from assay.v1 import (
    planner_service_pb2,
    planner_service_pb2_grpc,
    resolver_service_pb2,
    resolver_service_pb2_grpc,
)
from tests.support.processes import (
    assay_command,
    assay_process,
    free_port,
    service_process,
    wait_serving,
)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.process

DEV_MODE_WARNING = "assay: WARNING: authentication is off (dev mode)"
PLAINTEXT_WARNING = "assay: WARNING: --insecure-plaintext"
PRIVATE_FILES = ("ca-key.pem", "server-key.pem", "signing-key.pem")
PUBLIC_FILES = ("ca.pem", "server.pem", "jwks.json", "policy.toml")


def resolve_request() -> resolver_service_pb2.ResolveSemanticRequest:
    request = resolver_service_pb2.ResolveSemanticRequest(subject="api:x", predicate="retries.mode")
    claim = request.evidence.claims.add(
        subject="api:x", predicate="retries.mode", source="api_spec", confidence=0.9
    )
    claim.value.string_value = "safe"
    return request


def plan_request() -> planner_service_pb2.PlanEvidenceRequest:
    data = json.loads((ROOT / "examples/plan/safety-conflict-read-only.json").read_text())
    return json_format.ParseDict(data, planner_service_pb2.PlanEvidenceRequest())


def run_assay(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay_command(*args),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


def auth(creds: DevCredentials, name: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {creds.token(name)}"),)


def rpc_lines(log_path: Path, method: str) -> list[dict[str, object]]:
    lines = []
    for raw in log_path.read_text(encoding="utf-8").splitlines():
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if line.get("event") == "rpc" and line.get("method") == method:
            lines.append(line)
    return lines


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> DevCredentials:
    return write_dev_credentials(tmp_path_factory.mktemp("secure") / "creds")


class TestDevCredentials:
    def test_writes_every_file_owner_only_and_prints_no_secret(self, tmp_path: Path) -> None:
        """Every file is written; keys and tokens 0600, folders 0700; stdout names the next
        commands (serving, the operator registering a reviewer, a call) and holds no key or
        token."""
        root = tmp_path / "creds"
        done = run_assay("dev-credentials", str(root))
        assert done.returncode == 0, done.stderr
        written = DevCredentials(root)
        for name in PRIVATE_FILES:
            assert mode(root / name) == 0o600, name
        for name in PUBLIC_FILES:
            assert (root / name).is_file(), name
        for who in EXAMPLE_PRINCIPALS:
            assert mode(written.token_path(who.name)) == 0o600, who.name
        assert mode(root) == 0o700
        assert mode(root / "tokens") == 0o700
        assert f"assay up --credentials {root}" in done.stdout
        assert f"grpcurl -cacert {written.ca}" in done.stdout
        assert f"$(cat {written.token_path('alice')})" in done.stdout
        assert (
            "assay reviewer add alice --kind human --attested-by operator "
            f"--ca {written.ca} --token-file {written.token_path('operator')}" in done.stdout
        )
        assert "PRIVATE KEY" not in done.stdout + done.stderr
        for who in EXAMPLE_PRINCIPALS:
            assert written.token(who.name) not in done.stdout + done.stderr

    def test_refuses_a_folder_in_use_without_force(self, tmp_path: Path) -> None:
        """A non-empty folder is left alone (one line naming --force, exit 2); --force
        rewrites it and makes a loose folder owner-only again."""
        root = tmp_path / "creds"
        assert run_assay("dev-credentials", str(root)).returncode == 0
        before = DevCredentials(root).token("alice")
        refused = run_assay("dev-credentials", str(root))
        assert refused.returncode == 2
        assert refused.stderr.count("\n") == 1
        assert "--force" in refused.stderr
        assert DevCredentials(root).token("alice") == before

        root.chmod(0o755)
        forced = run_assay("dev-credentials", str(root), "--force")
        assert forced.returncode == 0, forced.stderr
        assert DevCredentials(root).token("alice") != before
        assert mode(root) == 0o700
        assert mode(DevCredentials(root).token_path("alice")) == 0o600

    def test_lifetime_days_sets_token_lifetime(self, tmp_path: Path) -> None:
        """--lifetime-days 2: tokens expire two days after they were issued."""
        root = tmp_path / "creds"
        assert run_assay("dev-credentials", str(root), "--lifetime-days", "2").returncode == 0
        claims = jwt.decode(DevCredentials(root).token("bob"), options={"verify_signature": False})
        assert claims["exp"] - claims["iat"] == 2 * 86400


class TestRefusals:
    def test_plaintext_on_a_public_address_refuses_before_binding(self) -> None:
        """--host 0.0.0.0 without TLS: exit 2, exactly one line naming --insecure-plaintext,
        and nothing served."""
        done = run_assay("serve", "resolver", "--host", "0.0.0.0", "--port", str(free_port()))
        assert done.returncode == 2
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert "--insecure-plaintext" in lines[0]
        assert lines[0].startswith("assay: refusing to serve plaintext on non-loopback address")

    def test_dev_mode_on_a_public_address_refuses_even_with_tls(
        self, creds: DevCredentials
    ) -> None:
        """TLS without authentication off loopback: one line naming --insecure-no-auth."""
        done = run_assay(
            "serve", "resolver", "--host", "0.0.0.0", "--port", str(free_port()),
            "--tls-cert", str(creds.server_cert), "--tls-key", str(creds.server_key),
        )  # fmt: skip
        assert done.returncode == 2
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert "--insecure-no-auth" in lines[0]

    @pytest.mark.parametrize(
        ("command", "flags", "message"),
        [
            ("serve", ["--tls-cert", "{server_cert}"], "--tls-cert and --tls-key go together"),
            ("serve", ["--tls-key", "{server_key}"], "--tls-cert and --tls-key go together"),
            ("serve", ["--jwks", "{jwks}"], "need --auth-policy"),
            ("serve", ["--tls-client-ca", "{ca}"], "--tls-client-ca needs --tls-cert"),
            (
                "serve",
                ["--tls-cert", "{root}/nope.pem", "--tls-key", "{server_key}"],
                "cannot read TLS certificate",
            ),
            (
                "serve",
                ["--tls-cert", "{server_cert}", "--tls-key", "{ca_key}"],
                "does not belong to certificate",
            ),
            ("serve", ["--auth-policy", "{jwks}"], "auth policy"),
            ("serve", ["--auth-policy", "{policy}", "--jwks", "{ca}"], "cannot read JWKS"),
            ("serve", ["--credentials", "{root}/tokens"], "is not a credentials folder"),
            ("serve", ["--credentials", "{root}/absent"], "there is no folder"),
            ("up", ["--auth-policy", "{policy}"], "the planner's own credential"),
            ("up", ["--resolver-ca", "{ca}"], "need TLS"),
        ],
    )
    def test_a_set_that_cannot_work_is_one_line_exit_2(
        self, creds: DevCredentials, command: str, flags: list[str], message: str
    ) -> None:
        """Half-configured, unreadable or malformed: one line, exit code 2, no traceback."""
        paths = {
            "root": creds.root,
            "server_cert": creds.server_cert,
            "server_key": creds.server_key,
            "ca_key": creds.ca_key,
            "ca": creds.ca,
            "jwks": creds.jwks,
            "policy": creds.policy,
        }
        filled = [flag.format(**paths) for flag in flags]
        port = str(free_port())
        args = ["serve", "resolver", "--port", port] if command == "serve" else ["up"]
        done = run_assay(*args, *filled, env={"ASSAY_RESOLVER_PORT": port})
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert message in done.stderr
        assert "Traceback" not in done.stderr

    def test_env_twins_are_read(self, creds: DevCredentials) -> None:
        """ASSAY_TLS_CERT alone is the same half set as --tls-cert alone."""
        done = run_assay(
            "serve", "resolver", "--port", str(free_port()),
            env={"ASSAY_TLS_CERT": str(creds.server_cert)},
        )  # fmt: skip
        assert done.returncode == 2
        assert "--tls-cert and --tls-key go together" in done.stderr

    def test_planner_refuses_a_remote_resolver_in_plaintext(self) -> None:
        """The planner will not call a non-loopback resolver without TLS."""
        done = run_assay(
            "serve", "planner", "--port", str(free_port()), "--resolver", "10.0.0.1:50051"
        )
        assert done.returncode == 2
        assert "refusing to call the resolver at 10.0.0.1:50051 in plaintext" in done.stderr


class TestWarnings:
    def test_dev_mode_says_so_once(self, tmp_path: Path) -> None:
        """`assay serve resolver` with no security flags: one loud dev-mode line on stderr."""
        port = free_port()
        with assay_process(
            ["serve", "resolver", "--port", str(port)], tmp_path / "log", port
        ) as proc:
            text = proc.log_path.read_text()
            assert proc.terminate() == 0
        warnings = [line for line in text.splitlines() if line.startswith("assay: WARNING")]
        assert len(warnings) == 1, warnings
        assert warnings[0].startswith(DEV_MODE_WARNING)
        assert "every caller holds every role for every tenant" in warnings[0]

    def test_insecure_plaintext_warns_at_start(self, tmp_path: Path) -> None:
        """--insecure-plaintext (here on loopback only) adds its own warning line."""
        port = free_port()
        with assay_process(
            ["serve", "resolver", "--port", str(port), "--insecure-plaintext"],
            tmp_path / "log",
            port,
        ) as proc:
            text = proc.log_path.read_text()
        assert sum(line.startswith(PLAINTEXT_WARNING) for line in text.splitlines()) == 1


class TestUpWithCredentials:
    def test_tls_and_tokens_end_to_end(self, tmp_path: Path, creds: DevCredentials) -> None:
        """Plaintext fails; no token is UNAUTHENTICATED; alice resolves and plans; the planner
        calls the resolver as `planner`; no warning, no token in the log; SIGTERM exits 0."""
        ports = {name: free_port() for name in ("resolver", "planner", "adjudication")}
        env = {f"ASSAY_{name.upper()}_PORT": str(port) for name, port in ports.items()}
        resolver, planner = (f"127.0.0.1:{ports[n]}" for n in ("resolver", "planner"))
        log = tmp_path / "up.log"
        trust = grpc.ssl_channel_credentials(creds.ca.read_bytes())
        args = ["up", "--credentials", str(creds.root), "--db", str(tmp_path / "assay.db")]
        with service_process(args, log, ports["resolver"], env, trust) as up:
            for port in ports.values():
                wait_serving(f"127.0.0.1:{port}", process=up.process, credentials=trust)

            with grpc.insecure_channel(resolver) as plain:
                stub = resolver_service_pb2_grpc.ResolverServiceStub(plain)
                with pytest.raises(grpc.RpcError) as caught:
                    stub.ResolveSemantic(resolve_request(), timeout=5)
                assert caught.value.code() == grpc.StatusCode.UNAVAILABLE

            with grpc.secure_channel(resolver, trust) as channel:
                stub = resolver_service_pb2_grpc.ResolverServiceStub(channel)
                with pytest.raises(grpc.RpcError) as caught:
                    stub.ResolveSemantic(resolve_request(), timeout=5)
                decoded = decode_rpc_error(caught.value)
                assert decoded.code == grpc.StatusCode.UNAUTHENTICATED
                assert decoded.reason == "ERROR_REASON_CREDENTIALS_MISSING"
                reply = stub.ResolveSemantic(
                    resolve_request(), timeout=10, metadata=auth(creds, "alice")
                )
                assert reply.resolution.subject == "api:x"

            with grpc.secure_channel(planner, trust) as channel:
                plans = planner_service_pb2_grpc.PlannerServiceStub(channel)
                answer = plans.PlanEvidence(
                    plan_request(), timeout=15, metadata=auth(creds, "alice")
                )
                assert answer.plan.candidates

            assert up.terminate(timeout=20) == 0

        text = log.read_text()
        assert "assay: WARNING" not in text
        for who in EXAMPLE_PRINCIPALS:
            assert creds.token(who.name) not in text
        direct = rpc_lines(log, "/assay.v1.ResolverService/ResolveSemantic")
        assert "alice" in [line.get("caller") for line in direct if line["code"] == "OK"]
        # The planner's own hop (one ResolveHypotheses for a plan about one semantic),
        # authenticated as itself.
        hop = rpc_lines(log, "/assay.v1.ResolverService/ResolveHypotheses")
        assert [line.get("caller") for line in hop if line["code"] == "OK"] == ["planner"]
        planned = rpc_lines(log, "/assay.v1.PlannerService/PlanEvidence")
        assert [line.get("caller") for line in planned] == ["alice"]


def _write_pem(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


class TestMutualTls:
    def test_client_certificate_required_and_mapped_by_policy(self, tmp_path: Path) -> None:
        """A client certificate from the CA whose CN the policy names resolves; one the policy
        does not name is PERMISSION_DENIED; no certificate, or another CA's, fails the handshake."""
        now, life = dt.datetime.now(dt.UTC), dt.timedelta(days=1)
        pem = serialization.Encoding.PEM

        def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
            return key.private_bytes(
                pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )

        ca_key, ca_cert = make_ca("Test CA", now, life)
        rogue_key, rogue_ca = make_ca("Rogue CA", now, life)
        server_key, server_cert = make_leaf(
            ca_key, ca_cert, "localhost", now, life, ["localhost", "127.0.0.1"]
        )
        clients = {
            "reader-bot": make_leaf(ca_key, ca_cert, "reader-bot", now, life, client=True),
            "stranger": make_leaf(ca_key, ca_cert, "stranger", now, life, client=True),
            "rogue": make_leaf(rogue_key, rogue_ca, "reader-bot", now, life, client=True),
        }
        ca = _write_pem(tmp_path / "ca.pem", ca_cert.public_bytes(pem))
        cert = _write_pem(tmp_path / "server.pem", server_cert.public_bytes(pem))
        key = _write_pem(tmp_path / "server-key.pem", key_pem(server_key))
        policy = tmp_path / "policy.toml"
        policy.write_text(
            '[[principals]]\nissuer = "x509"\nsubject = "reader-bot"\nroles = ["reader"]\n'
        )

        def channel_credentials(client: str | None) -> grpc.ChannelCredentials:
            if client is None:
                return grpc.ssl_channel_credentials(ca.read_bytes())
            client_key, client_cert = clients[client]
            return grpc.ssl_channel_credentials(
                ca.read_bytes(), key_pem(client_key), client_cert.public_bytes(pem)
            )

        port = free_port()
        target = f"127.0.0.1:{port}"
        args = [
            "serve", "resolver", "--port", str(port), "--tls-cert", str(cert),
            "--tls-key", str(key), "--tls-client-ca", str(ca), "--auth-policy", str(policy),
        ]  # fmt: skip
        with service_process(
            args, tmp_path / "log", port, credentials=channel_credentials("reader-bot")
        ):

            def resolve(client: str | None) -> grpc.RpcError | None:
                with grpc.secure_channel(target, channel_credentials(client)) as channel:
                    stub = resolver_service_pb2_grpc.ResolverServiceStub(channel)
                    try:
                        stub.ResolveSemantic(resolve_request(), timeout=5)
                    except grpc.RpcError as error:
                        return error
                return None

            assert resolve("reader-bot") is None
            stranger = resolve("stranger")
            assert stranger is not None
            assert stranger.code() == grpc.StatusCode.PERMISSION_DENIED
            assert decode_rpc_error(stranger).reason == "ERROR_REASON_ROLE_REQUIRED"
            for client in (None, "rogue"):
                failed = resolve(client)
                assert failed is not None, client
                assert failed.code() == grpc.StatusCode.UNAVAILABLE, client
        lines = rpc_lines(tmp_path / "log", "/assay.v1.ResolverService/ResolveSemantic")
        assert [line.get("caller") for line in lines if line["code"] == "OK"] == ["reader-bot"]

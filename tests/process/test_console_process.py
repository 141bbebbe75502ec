"""The console as a real process: `assay up` serves it beside the services (its address in
the start lines, sign-in first, healthy while the services answer, its requests logged and
counted, stopped by the same SIGTERM within the grace), a taken console port starts
nothing, and `assay serve console` refuses settings that cannot be safe in one line."""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from assay.runtime.auth.dev_credentials import write_dev_credentials
from tests.support.eventually import eventually
from tests.support.processes import AssayProcess, assay_command, free_port, service_process

GRACE_SECONDS = 3.0
# What a loaded machine may add to the grace: the interpreter's own exit.
EXIT_ALLOWANCE_SECONDS = 4.0
START_LINE = re.compile(r"^assay console serving on (http://127\.0\.0\.1:\d+)$", re.MULTILINE)


def up_env(tmp_path: Path, console_port: int) -> dict[str, str]:
    env = {f"ASSAY_{n.upper()}_PORT": str(free_port()) for n in SERVICES}
    env["ASSAY_CONSOLE_PORT"] = str(console_port)
    env["ASSAY_DB"] = str(tmp_path / "assay.db")
    return env


SERVICES = ("resolver", "planner", "adjudication")


def console_address(proc: AssayProcess) -> str:
    """The console's address, once `up` has printed its start line."""

    def printed() -> str | None:
        if proc.process.poll() is not None:
            raise RuntimeError(f"assay up exited with {proc.process.returncode}")
        found = START_LINE.search(proc.log_path.read_text(encoding="utf-8", errors="replace"))
        return found.group(1) if found else None

    return eventually(printed, message="the console's start line", timeout=20.0)


def get(address: str, path: str) -> tuple[int, str, str]:
    """GET ``path``: the status, the Location header ("" without one) and the body."""
    host, port = address.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read().decode("utf-8", errors="replace")
        return response.status, response.getheader("location") or "", body
    finally:
        connection.close()


def run_assay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay_command(*args), capture_output=True, text=True, timeout=60, check=False
    )


class TestUpServesTheConsole:
    def test_sign_in_first_healthy_logged_counted_and_stopped_within_the_grace(
        self, tmp_path: Path
    ) -> None:
        """The start line names the address; / goes to sign in; /healthz is 200; one log
        line per request (route template, no query string) and its count on the shared
        metrics port; SIGTERM, with a request half sent, ends it within the grace."""
        port, metrics = free_port(), free_port()
        env = up_env(tmp_path, port)
        args = ["up", "--grace", str(GRACE_SECONDS), "--metrics-port", str(metrics)]
        resolver = int(env["ASSAY_RESOLVER_PORT"])
        with service_process(args, tmp_path / "up.log", resolver, env) as up:
            address = console_address(up)
            assert address == f"http://127.0.0.1:{port}"
            assert get(address, "/")[:2] == (303, "/signin?next=/")
            eventually(
                lambda: get(address, "/healthz")[0] == 200,
                message="the console's /healthz to be 200",
                timeout=20.0,
            )
            assert get(address, "/signin?next=/review&code=secret-code")[0] == 200
            status, _, body = get(f"http://127.0.0.1:{metrics}", "/metrics")
            assert status == 200
            counted = 'assay_console_requests_total{method="GET",route="/signin",status="200"}'
            assert counted in body
            assert "grpc_server_handled_total" in body  # the services' series, same endpoint

            with socket.create_connection(("127.0.0.1", port), timeout=10) as half:
                half.sendall(b"GET /signin HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                started = time.monotonic()
                up.process.send_signal(signal.SIGTERM)
                code = up.process.wait(timeout=GRACE_SECONDS + 30)
                elapsed = time.monotonic() - started
            assert code == 0
            assert elapsed < GRACE_SECONDS + EXIT_ALLOWANCE_SECONDS
        lines = up.log_lines()
        requests = [line for line in lines if line.get("event") == "http_request"]
        assert {"method": "GET", "route": "/", "status": 303} in [
            {k: line[k] for k in ("method", "route", "status")} for line in requests
        ]
        assert all(isinstance(line["duration_ms"], float) for line in requests)
        assert any(line.get("event") == "console_stopped" for line in lines)
        assert "secret-code" not in up.log_path.read_text()

    def test_a_taken_console_port_starts_nothing(self, tmp_path: Path) -> None:
        """One line naming the console's port, exit 1, no service listening."""
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen()
            port = holder.getsockname()[1]
            env = up_env(tmp_path, port)
            done = subprocess.run(
                assay_command("up"),
                capture_output=True,
                text=True,
                timeout=60,
                env={**os.environ, **env},
                check=False,
            )
        assert done.returncode == 1
        assert done.stderr.strip().splitlines()[-1] == (
            f"assay: could not bind 127.0.0.1:{port} for console: the port is in use"
        )
        for name in SERVICES:
            with socket.socket() as probe:
                assert probe.connect_ex(("127.0.0.1", int(env[f"ASSAY_{name.upper()}_PORT"])))
        assert not (tmp_path / "assay.db").exists()


class TestServeConsoleFlags:
    @pytest.mark.parametrize(
        ("flags", "message"),
        [
            (["--host", "0.0.0.0"], "dev mode (sign in by typing a name, no credentials) is "
             "served on loopback only; 0.0.0.0 is not a loopback address"),
            (["--host", "10.0.0.5", "--dev-credentials", "{creds}", "--tls-cert", "{cert}",
              "--tls-key", "{key}"], "the dev sign-in (--dev-credentials) is served on "
             "loopback only"),
            (["--adjudication", "10.0.0.1:50053"], "refusing to call the adjudication at "
             "10.0.0.1:50053 in plaintext"),
            (["--oidc-issuer", "https://idp.example"], "--oidc-issuer and --oidc-client-id "
             "go together"),
            (["--services-server-name", "localhost"], "needs TLS to the services"),
        ],
    )  # fmt: skip
    def test_what_cannot_be_safe_is_one_line_exit_2(
        self, tmp_path: Path, flags: list[str], message: str
    ) -> None:
        creds = write_dev_credentials(tmp_path / "creds")
        paths = {"creds": creds.root, "cert": creds.server_cert, "key": creds.server_key}
        filled = [flag.format(**paths) for flag in flags]
        done = run_assay("serve", "console", "--port", str(free_port()), *filled)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert message in done.stderr
        assert "Traceback" not in done.stderr

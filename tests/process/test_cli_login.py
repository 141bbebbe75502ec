"""``assay login``, ``whoami`` and ``context`` against a real OpenID Connect provider
(oidc-provider-mock, its own process) and services that trust it.

``assay login`` runs as a real process; the test plays the person at the browser by driving
the provider's own login form with httpx, which sends the code to the command's loopback
listener. Then commands reach the services with no --target, --ca, --token-file or
--reviewer, from the context and the signed-in identity. The services run in this process on
a background thread's event loop, so the blocking subprocess calls never stall them.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.oidc import (
    ALICE,
    CLIENT_ID,
    CLIENT_SECRET,
    OidcStack,
    Provider,
    oidc_provider,
    oidc_stack,
    seed,
)
from tests.support.processes import assay_command

pytestmark = pytest.mark.process
START_SECONDS = 30.0
TIMEOUT = 20.0


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with oidc_provider() as running:
        yield running


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, provider: Provider
) -> Iterator[tuple[OidcStack, str]]:
    """The services trusting ``provider``, seeded, served from a background event loop."""
    directory = tmp_path_factory.mktemp("oidc")
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def serve() -> None:
        stop = asyncio.Event()
        state["loop"], state["stop"] = asyncio.get_running_loop(), stop
        try:
            async with oidc_stack(directory, provider) as running:
                (state["case"],) = await seed(running, 1)
                state["stack"] = running
                ready.set()
                await stop.wait()
        finally:
            ready.set()

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    assert ready.wait(START_SECONDS), "the stack did not start"
    assert "stack" in state, "the stack failed to start"
    yield state["stack"], state["case"]
    state["loop"].call_soon_threadsafe(state["stop"].set)
    thread.join(START_SECONDS)


def environment(config: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["XDG_CONFIG_HOME"] = str(config)
    return env


def assay(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay_command(*args),
        env=environment(config),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def log_in(config: Path, provider: Provider, secret: Path, subject: str) -> str:
    """Run ``assay login`` and answer it in the provider's login form; its stderr."""
    process = subprocess.Popen(
        assay_command(
            "login",
            "--issuer",
            provider.issuer,
            "--client-id",
            CLIENT_ID,
            "--client-secret-file",
            str(secret),
            "--name",
            "work",
            "--no-browser",
            "--wait",
            "60",
        ),
        env=environment(config),
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    try:
        lines: list[str] = []
        while not lines or not lines[-1].startswith(provider.issuer):
            line = process.stderr.readline()
            assert line, f"assay login ended early: {''.join(lines)}"
            lines.append(line.strip())
        with httpx.Client(timeout=10.0) as browser:
            form = browser.get(lines[-1])
            form.raise_for_status()
            sent = browser.post(str(form.url), data={"sub": subject})
            assert sent.status_code == 302, sent.text
            back = browser.get(sent.headers["location"])  # the command's loopback listener
            assert back.status_code == 200
        assert process.wait(timeout=30) == 0
        return "\n".join(lines) + process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


class TestLogin:
    def test_login_whoami_context_and_commands_without_flags(
        self, tmp_path: Path, provider: Provider, stack: tuple[OidcStack, str]
    ) -> None:
        """Signed in through the provider, the tokens kept owner-only; whoami names the
        subject and the reviewer id; a context names the target, CA and identity, so
        ``queue`` and ``review`` need none of --target, --ca, --token-file, --reviewer."""
        running, case_id = stack
        config = tmp_path / "config"
        secret = tmp_path / "secret"
        secret.write_text(CLIENT_SECRET)
        said = log_in(config, provider, secret, ALICE)
        assert f"Signed in as {ALICE}" in said
        folder = config / "assay" / "identities"
        for path in (folder / "work.json", folder / "work.jwt"):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        token = (folder / "work.jwt").read_text().strip()
        assert token not in said

        who = assay(config, "whoami", "-o", "json")
        assert who.returncode == 0, who.stderr
        shown = json.loads(who.stdout)
        assert (shown["issuer"], shown["subject"], shown["reviewer_id"]) == (
            provider.issuer,
            ALICE,
            "alice",
        )
        assert token not in who.stdout

        added = assay(
            config,
            "context",
            "add",
            "acme",
            "--adjudication",
            running.target("adjudication"),
            "--ca",
            str(running.creds.ca),
            "--identity",
            "work",
        )
        assert added.returncode == 0, added.stderr
        listed = assay(config, "context", "list", "-o", "json")
        assert json.loads(listed.stdout)[0]["current"] is True

        queue = assay(config, "queue", "-o", "json")
        assert queue.returncode == 0, queue.stderr
        assert [c["caseId"] for c in json.loads(queue.stdout)["cases"]] == [case_id]
        reviewed = assay(config, "review", case_id, "--label", "key", "-o", "json")
        assert reviewed.returncode == 0, reviewed.stderr
        assert json.loads(reviewed.stdout)["review"]["reviewerId"] == "alice"

        # Signing out deletes the tokens and names where the provider's own sign-in ends.
        out = assay(config, "logout")
        assert out.returncode == 0, out.stderr
        assert f"Signed out {ALICE}" in out.stderr
        assert "/oauth2/end_session" in out.stdout
        assert not (folder / "work.json").exists()
        assert not (folder / "work.jwt").exists()
        after = assay(config, "queue", "-o", "json")
        assert after.returncode != 0
        assert "run `assay login`" in after.stderr

    def test_near_its_end_the_sign_in_is_refreshed_and_at_its_end_refused(
        self, tmp_path: Path, provider: Provider
    ) -> None:
        """Within a minute of the ID token's end a command asks the provider with the
        refresh token: one it honours is kept (this provider renews no ID token by
        refresh), one it refuses is dropped; past the end the command says to sign in."""
        config = tmp_path / "config"
        secret = tmp_path / "secret"
        secret.write_text(CLIENT_SECRET)
        log_in(config, provider, secret, "bob")
        stored = config / "assay" / "identities" / "work.json"
        identity = json.loads(stored.read_text())
        soon = time.time() + 30
        for given, kept in (
            (identity["refresh_token"], identity["refresh_token"]),
            ("revoked-" + identity["refresh_token"], ""),
        ):
            stored.write_text(json.dumps({**identity, "expires_at": soon, "refresh_token": given}))
            who = assay(config, "whoami", "-o", "json")
            assert who.returncode == 0, who.stderr
            assert json.loads(who.stdout)["subject"] == "bob"
            assert json.loads(stored.read_text())["refresh_token"] == kept
        stored.write_text(json.dumps({**identity, "expires_at": time.time() - 1}))
        ended = assay(config, "whoami")
        assert ended.returncode == 1
        assert "has ended: run `assay login`" in ended.stderr

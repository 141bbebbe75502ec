"""Debian's Chromium driven by Playwright, for the console's browser tests.

The browser is the system's (``/usr/bin/chromium``, or ``chromium`` on ``PATH``): Playwright
never downloads one here. Without it the tests skip with the reason, except under
``CI=true``, where they fail (``.ci/run`` installs it). Chromium starts with the flags this
machine's closed network needs (no background networking, no component updates).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import Browser, async_playwright

from assay.console.server import start
from assay.console.settings import ConsoleSettings
from tests.support.secure import SecureStack

FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_path() -> str:
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None
    )
    if found is None:
        message = "Chromium is not installed (Debian: apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message} (CI=true: a missing browser fails; .ci/run installs it)")
        pytest.skip(message)
    return found


async def launch() -> AsyncIterator[Browser]:
    """One headless Chromium for a test (closed after it)."""
    path = chromium_path()
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=path, args=list(FLAGS))
        try:
            yield browser
        finally:
            await browser.close()


@contextlib.asynccontextmanager
async def console_for(stack: SecureStack, **overrides: Any) -> AsyncIterator[str]:
    """The console on a free loopback port in this process, talking to ``stack``'s services
    over TLS, its dev sign-in offering ``stack``'s example principals; yields its base URL."""
    values: dict[str, Any] = {
        "port": 0,
        "adjudication": stack.target("adjudication"),
        "planner": stack.target("planner"),
        "resolver": stack.target("resolver"),
        "ca": stack.creds.ca,
        "dev_credentials": stack.creds.root,
    }
    values.update(overrides)
    running = await start(ConsoleSettings(**values))
    try:
        yield running.address
    finally:
        await running.stop()

"""Signing in to the console through a real OpenID Connect provider (oidc-provider-mock, its
own process), in a real Chromium: the provider's own login form, back to the page asked
for, the queue loaded from the services with the person's ID token, sign-out, a tampered
``state`` refused, and an expired session sent to sign in and back."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
from playwright.async_api import Browser, Page, Route, expect

from assay.transport import is_loopback
from tests.support.browser import console_for, launch
from tests.support.eventually import eventually_async
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
from tests.support.processes import free_port

TIMEOUT = 20.0
COOKIE = "__Host-assay"


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async for found in launch():
        yield found


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with oidc_provider() as running:
        yield running


@contextlib.asynccontextmanager
async def console(
    stack: OidcStack, provider: Provider, directory: Path, **overrides: Any
) -> AsyncIterator[str]:
    """The console signing people in with ``provider`` only (no dev sign-in)."""
    secret = directory / "client-secret"
    secret.write_text(CLIENT_SECRET + "\n")
    async with console_for(
        stack,
        port=free_port(),  # the redirect URI names the port, so it is known before start
        dev_credentials=None,
        oidc_issuer=provider.issuer,
        oidc_client_id=CLIENT_ID,
        oidc_client_secret_file=secret,
        **overrides,
    ) as url:
        yield url


async def loopback_only(route: Route) -> None:
    """The provider's page links a stylesheet on a CDN: this closed network reaches only
    loopback, so everything else is refused at once instead of waited for."""
    host = urlsplit(route.request.url).hostname or ""
    if is_loopback(host):
        await route.continue_()
    else:
        await route.abort()


async def new_page(browser: Browser) -> Page:
    page = await browser.new_page()
    await page.route("**/*", loopback_only)
    return page


async def provider_form(page: Page, provider: Provider, subject: str) -> None:
    """The provider's real login form: type the subject, authorize."""
    await page.wait_for_url(f"{provider.issuer}/oauth2/authorize**")
    await page.locator("input[name=sub]").fill(subject)
    await page.get_by_role("button", name="Authorize").click()


class TestOidcSignIn:
    async def test_alice_signs_in_works_and_signs_out(
        self, tmp_path: Path, browser: Browser, provider: Provider
    ) -> None:
        """Through the provider's form and back to the queue she asked for, loaded with her
        ID token as reviewer alice; signing out ends the session and the back button shows
        no page of it."""
        async with oidc_stack(tmp_path, provider) as stack:
            await seed(stack, 2)
            async with console(stack, provider, tmp_path) as url:
                page = await new_page(browser)
                await page.goto(f"{url}/review")
                await expect(page).to_have_url(f"{url}/signin?next=/review")
                await page.get_by_role("link", name="Sign in with your organisation").click()
                await provider_form(page, provider, ALICE)
                await expect(page).to_have_url(f"{url}/review")
                await expect(page.get_by_role("heading", name="My queue")).to_be_visible()
                await expect(page.get_by_text("2 cases waiting")).to_be_visible()
                await expect(page.get_by_text("Signed in as alice")).to_be_visible()
                (cookie,) = [c for c in await page.context.cookies() if c["name"] == COOKIE]
                assert (cookie["httpOnly"], cookie["secure"], cookie["sameSite"]) == (
                    True,
                    True,
                    "Lax",
                )
                await page.get_by_role("button", name="Sign out").click()
                await expect(page).to_have_url(f"{url}/signin")
                assert not [c for c in await page.context.cookies() if c["name"] == COOKIE]
                await page.go_back()
                await expect(page).to_have_url(f"{url}/signin?next=/review")
                await expect(page.get_by_role("heading", name="My queue")).to_have_count(0)

    async def test_a_tampered_state_is_refused(
        self, tmp_path: Path, browser: Browser, provider: Provider
    ) -> None:
        """The provider sends back the state it was given; one the console did not make
        signs nobody in."""
        async with (
            oidc_stack(tmp_path, provider) as stack,
            console(stack, provider, tmp_path) as url,
        ):
            page = await new_page(browser)
            await page.goto(f"{url}/signin?next=/review")
            await page.get_by_role("link", name="Sign in with your organisation").click()
            await page.wait_for_url(f"{provider.issuer}/oauth2/authorize**")
            parts = urlsplit(page.url)
            query = dict(parse_qsl(parts.query))
            query["state"] = query["state"][::-1]
            await page.goto(urlunsplit(parts._replace(query=urlencode(query))))
            await provider_form(page, provider, ALICE)
            await expect(
                page.get_by_role("heading", name="This sign-in is not valid or has expired")
            ).to_be_visible()
            await page.goto(f"{url}/review")
            await expect(page).to_have_url(f"{url}/signin?next=/review")

    async def test_an_expired_session_signs_in_again_and_returns(
        self, tmp_path: Path, browser: Browser, provider: Provider
    ) -> None:
        """A session past its end sends her to sign in, and back to the page she was on."""
        lifetime = timedelta(seconds=3)
        async with oidc_stack(tmp_path, provider) as stack:
            (case_id,) = await seed(stack, 1)
            async with console(stack, provider, tmp_path, session_lifetime=lifetime) as url:
                page = await new_page(browser)
                await page.goto(f"{url}/review/{case_id}")
                await page.get_by_role("link", name="Sign in with your organisation").click()
                await provider_form(page, provider, ALICE)
                await expect(page).to_have_url(f"{url}/review/{case_id}")
                signin = f"{url}/signin?next=/review/{case_id}"

                async def sent_to_sign_in() -> bool:
                    await page.goto(f"{url}/review/{case_id}")
                    return page.url == signin

                await eventually_async(sent_to_sign_in, message="the session ended", timeout=15)
                await page.get_by_role("link", name="Sign in with your organisation").click()
                await provider_form(page, provider, ALICE)
                await expect(page).to_have_url(f"{url}/review/{case_id}")

"""The console's dev mode (sign in by typing a name, no token) on loopback only, its health
route, and its one log line per request (the route's template, never the path or query)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from assay.console.app import build_app
from assay.console.backends import bearer
from assay.console.settings import DEV_MODE_ISSUER, ConsoleSettings
from assay.runtime.logging import configure_logging


class TestSettings:
    @pytest.mark.parametrize("host", ["0.0.0.0", "10.0.0.5", "::", "console.example.com"])
    def test_dev_mode_is_refused_off_loopback(self, host: str) -> None:
        """Even over HTTPS: a typed name is no credential, so only this machine may use it."""
        settings = ConsoleSettings(
            host=host, dev_mode=True, tls_cert=Path("cert.pem"), tls_key=Path("key.pem")
        )
        with pytest.raises(ValueError, match=r"dev mode .* loopback only"):
            settings.check()

    @pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
    def test_dev_mode_on_loopback_is_a_way_to_sign_in(self, host: str) -> None:
        ConsoleSettings(host=host, dev_mode=True).check()

    def test_dev_mode_and_dev_credentials_exclude_each_other(self, tmp_path: Path) -> None:
        settings = ConsoleSettings(dev_mode=True, dev_credentials=tmp_path)
        with pytest.raises(ValueError, match="exclude each other"):
            settings.check()

    def test_without_dev_mode_there_is_still_no_way_to_sign_in(self) -> None:
        with pytest.raises(ValueError, match="no way to sign in"):
            ConsoleSettings().check()

    def test_no_token_means_no_authorization_header(self) -> None:
        """Dev mode's calls carry no metadata; a real token is sent as a bearer token."""
        assert bearer("") == ()
        assert bearer("t") == (("authorization", "Bearer t"),)


def client(settings: ConsoleSettings | Starlette, peer: str = "127.0.0.1") -> httpx.AsyncClient:
    """A client of the console's app (no server), connecting from ``peer``."""
    app = build_app(settings) if isinstance(settings, ConsoleSettings) else settings
    transport = httpx.ASGITransport(app, client=(peer, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080")


async def sign_in(browser: httpx.AsyncClient, data: dict[str, str]) -> httpx.Response:
    """Post the sign-in form as a browser does: with the token the sign-in page gave it, in
    the form and in its ``__Host-assay-signin`` cookie."""
    page = await browser.get("/signin")
    token = page.cookies.get("__Host-assay-signin", "")
    cookie = {"cookie": f"__Host-assay-signin={token}"}
    return await browser.post("/signin/dev", data={**data, "signin": token}, headers=cookie)


class TestTypedSignIn:
    async def test_the_sign_in_page_says_dev_mode_and_asks_for_a_name(self) -> None:
        async with client(ConsoleSettings(dev_mode=True)) as browser:
            page = await browser.get("/signin", params={"next": "/review"})
        assert page.status_code == 200
        assert "Dev mode" in page.text
        assert "Name to act as" in page.text

    async def test_a_typed_name_signs_in_without_a_token(self) -> None:
        """The session is the typed name under the dev-mode issuer, with no token, and the
        person goes back where they were headed."""
        app = build_app(ConsoleSettings(dev_mode=True))
        async with client(app) as browser:
            done = await sign_in(browser, {"name": "alice", "next": "/review"})
        assert done.status_code == 303
        assert done.headers["location"] == "/review"
        session_id = done.cookies["__Host-assay"]
        session = app.state.console.sessions.get(session_id)
        assert (session.issuer, session.subject, session.token) == (DEV_MODE_ISSUER, "alice", "")

    @pytest.mark.parametrize("name", ["", " ", "-x", "a b", "<script>", "a" * 65])
    async def test_a_name_that_is_not_a_subject_is_asked_again(self, name: str) -> None:
        async with client(ConsoleSettings(dev_mode=True)) as browser:
            done = await sign_in(browser, {"name": name, "next": "/"})
        assert done.status_code == 400
        assert "__Host-assay" not in done.cookies
        assert "Type a name" in done.text

    async def test_a_browser_elsewhere_is_not_offered_it(self) -> None:
        """Behind a proxy on the same machine, a non-loopback peer still gets no dev mode."""
        async with client(ConsoleSettings(dev_mode=True), peer="10.1.2.3") as browser:
            page = await browser.get("/signin")
            done = await sign_in(browser, {"name": "alice"})
        assert "Name to act as" not in page.text
        assert done.status_code == 404


class TestRequestLog:
    async def test_one_line_names_the_route_template_not_the_path(self) -> None:
        """No case id, query string or cookie reaches the log: method, route, status, time."""
        stream = io.StringIO()
        configure_logging("info", stream)
        try:
            async with client(ConsoleSettings(dev_mode=True)) as browser:
                browser.cookies.set("__Host-assay", "cookie-x")
                await browser.get("/review/case-123?code=secret-code")
        finally:
            configure_logging("info")
        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
        (line,) = [entry for entry in lines if entry["event"] == "http_request"]
        assert line["method"] == "GET"
        assert line["route"] == "/review/{case_id}"
        assert line["status"] == 303
        assert line["duration_ms"] >= 0
        text = stream.getvalue()
        for secret in ("case-123", "secret-code", "cookie-x"):
            assert secret not in text


class TestCachingAndCompression:
    async def test_static_files_are_kept_and_compressed_pages_are_neither(self) -> None:
        """The package's script may be cached and gzipped; a page (a CSRF token beside
        stored text) is never stored and never compressed (BREACH)."""
        async with client(ConsoleSettings(dev_mode=True)) as browser:
            gzip = {"accept-encoding": "gzip"}
            script = await browser.get("/static/console.js", headers=gzip)
            page = await browser.get("/signin", headers=gzip)
        assert script.headers["content-encoding"] == "gzip"
        assert script.headers["cache-control"] == "public, max-age=3600"
        assert "content-security-policy" in script.headers
        assert "content-encoding" not in page.headers
        assert page.headers["cache-control"] == "no-store"

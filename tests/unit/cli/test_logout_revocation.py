"""``assay logout`` against a provider that offers RFC 7009 revocation: the refresh token is
revoked before the files go, and a provider that refuses it leaves them in place. The
provider is a real HTTP server on loopback serving discovery and a revocation endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from assay.cli import signin
from tests.support.loopback_http import QuietHandler, base_url, loopback_server, serving


class Revoker:
    """Discovery plus a revocation endpoint that records what it was sent."""

    def __init__(self) -> None:
        self.revoked: list[dict[str, list[str]]] = []
        self.status = 200
        revoker = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                body = json.dumps(
                    {
                        "issuer": revoker.issuer,
                        "token_endpoint": f"{revoker.issuer}/token",
                        "revocation_endpoint": f"{revoker.issuer}/revoke",
                    }
                ).encode()
                self.send_json(200, body)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                revoker.revoked.append(parse_qs(self.rfile.read(length).decode()))
                self.send_json(revoker.status, b"{}")

        self.server = loopback_server(Handler)
        self.issuer = base_url(self.server)


@pytest.fixture
def revoker() -> Iterator[Revoker]:
    found = Revoker()
    with serving(found.server):
        yield found


def signed_in(config: Path, issuer: str, monkeypatch: pytest.MonkeyPatch) -> signin.Identity:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    identity = signin.Identity(
        name="work",
        issuer=issuer,
        client_id="assay-cli",
        token_endpoint=f"{issuer}/token",
        jwks_uri=f"{issuer}/jwks",
        id_token="header.body.signature",
        refresh_token="refresh-1",
        subject="alice",
        reviewer_id="alice",
        expires_at=0.0,
    )
    identity.save()
    return identity


class TestLogoutRevokes:
    def test_the_refresh_token_is_revoked_then_the_files_go(
        self, tmp_path: Path, revoker: Revoker, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        identity = signed_in(tmp_path, revoker.issuer, monkeypatch)
        assert signin.logout(identity) == ""
        assert len(revoker.revoked) == 1
        (sent,) = revoker.revoked
        assert sent["token"] == ["refresh-1"]
        assert sent["token_type_hint"] == ["refresh_token"]
        folder = tmp_path / "assay" / "identities"
        assert list(folder.iterdir()) == []

    def test_a_refused_revocation_keeps_the_files(
        self, tmp_path: Path, revoker: Revoker, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        identity = signed_in(tmp_path, revoker.issuer, monkeypatch)
        revoker.status = 400
        with pytest.raises(signin.SignInError, match="refused to revoke"):
            signin.logout(identity)
        assert signin.Identity.load("work").refresh_token == "refresh-1"
        assert identity.token_file.exists()

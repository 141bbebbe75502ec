"""Client credentials without a server: what they accept, what they refuse before any
channel exists, and how a token file is kept current.

The refusals here must happen before the network: the tests replace gRPC's
channel constructors with ones that fail the test if called.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.client import (
    AdjudicationClient,
    AsyncAdjudicationClient,
    AsyncPlannerClient,
    AsyncResolverClient,
    Credentials,
    PlannerClient,
    ResolverClient,
)
from assay.client.channel import aio_channel, sync_channel
from assay.client.credentials import StaticToken
from assay.transport import TokenFile, is_loopback, target_host

TOKEN = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
CLIENTS: list[type[Any]] = [
    ResolverClient,
    PlannerClient,
    AdjudicationClient,
    AsyncResolverClient,
    AsyncPlannerClient,
    AsyncAdjudicationClient,
]
CHANNEL_CONSTRUCTORS = [
    (grpc, "insecure_channel"),
    (grpc, "secure_channel"),
    (grpc.aio, "insecure_channel"),
    (grpc.aio, "secure_channel"),
]


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any channel constructed from here on fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a channel was opened")

    for module, name in CHANNEL_CONSTRUCTORS:
        monkeypatch.setattr(module, name, refuse)


class TestCredentialsValue:
    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"token": TOKEN, "token_file": "t.jwt"}, "not both"),
            ({"client_cert": "c.pem"}, "needs its key"),
            ({"client_key": "k.pem"}, "needs its key"),
            ({"token": ""}, "not one bearer token"),
            ({"token": "two words"}, "not one bearer token"),
            ({"token": "tökén"}, "not one bearer token"),
        ],
    )
    def test_contradictions_and_malformed_tokens_are_value_errors(
        self, kwargs: dict[str, Any], message: str
    ) -> None:
        """Each is refused at construction, with a message that never repeats a token."""
        with pytest.raises(ValueError, match=message) as caught:
            Credentials(**kwargs)
        token = kwargs.get("token")
        if token:
            assert token not in str(caught.value)

    @pytest.mark.parametrize(
        ("kwargs", "tls"),
        [
            ({}, False),
            ({"token": TOKEN}, False),
            ({"token_file": "t.jwt"}, False),
            ({"ca": "ca.pem"}, True),
            ({"client_cert": "c.pem", "client_key": "k.pem"}, True),
            ({"tls": True}, True),
            ({"ca": ""}, False),
        ],
    )
    def test_tls_is_on_with_a_ca_a_client_certificate_or_tls_true(
        self, kwargs: dict[str, Any], tls: bool
    ) -> None:
        """A token alone does not make TLS; an empty path (an empty env var) is unset."""
        assert Credentials(**kwargs).uses_tls is tls

    def test_the_repr_hides_the_token(self) -> None:
        """A token given as a value shows as <hidden>; paths are shown."""
        shown = repr(Credentials(token=TOKEN, ca="ca.pem"))
        assert TOKEN not in shown
        assert "token=<hidden>" in shown
        assert "ca.pem" in shown
        assert TOKEN not in repr(StaticToken(TOKEN))

    def test_from_folder_names_the_dev_credentials_layout(self, tmp_path: Path) -> None:
        """``from_folder(DIR, NAME)``: trust DIR/ca.pem, send DIR/tokens/NAME.jwt."""
        creds = Credentials.from_folder(tmp_path, "alice")
        assert creds.ca == tmp_path / "ca.pem"
        assert creds.token_file == tmp_path / "tokens" / "alice.jwt"

    def test_an_unreadable_ca_names_the_file(self, tmp_path: Path) -> None:
        """The channel cannot be built; the error says which file."""
        missing = tmp_path / "nope.pem"
        with pytest.raises(ValueError, match=r"nope\.pem"):
            Credentials(ca=missing).channel_credentials("localhost:1")

    def test_an_unreadable_token_file_fails_when_the_channel_is_built(self, tmp_path: Path) -> None:
        """Not on the first call, later: at once."""
        with pytest.raises(ValueError, match="cannot read token file"):
            Credentials(token_file=tmp_path / "missing.jwt").channel_credentials("localhost:1")


class TestPlaintextRule:
    @pytest.mark.parametrize(
        ("target", "kwargs", "refused"),
        [
            ("assay.example.com:50053", {"token": TOKEN}, True),
            ("10.0.0.5:50053", {"token_file": "t.jwt"}, True),
            ("dns:///assay.example.com:443", {"token": TOKEN}, True),
            ("127.0.0.1:50053", {"token": TOKEN}, False),
            ("localhost:50053", {"token": TOKEN}, False),
            ("[::1]:50053", {"token": TOKEN}, False),
            ("unix:/run/assay/adjudication.sock", {"token": TOKEN}, False),
            ("unix-abstract:assay", {"token": TOKEN}, False),
            ("assay.example.com:50053", {"token": TOKEN, "ca": "ca.pem"}, False),
            ("assay.example.com:50053", {"token": TOKEN, "tls": True}, False),
            ("assay.example.com:50053", {}, False),
        ],
    )
    def test_a_token_never_goes_plaintext_off_loopback(
        self, target: str, kwargs: dict[str, Any], refused: bool
    ) -> None:
        """Token + no TLS + a host other than this machine: ValueError; anything else passes."""
        creds = Credentials(**kwargs)
        if refused:
            with pytest.raises(ValueError, match="plaintext") as caught:
                creds.check_target(target)
            assert TOKEN not in str(caught.value)
        else:
            creds.check_target(target)

    @pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__name__)
    @pytest.mark.usefixtures("no_network")
    def test_every_client_refuses_before_opening_a_channel(self, client: type[Any]) -> None:
        """Constructing the client raises; no channel constructor was reached."""
        with pytest.raises(ValueError, match="refusing to send a bearer token in plaintext"):
            client("assay.example.com:50053", credentials=Credentials(token=TOKEN))

    @pytest.mark.usefixtures("no_network")
    def test_the_channel_helpers_refuse_too(self) -> None:
        """``sync_channel`` and ``aio_channel`` apply the same rule."""
        creds = Credentials(token=TOKEN)
        for helper in (sync_channel, aio_channel):
            with pytest.raises(ValueError, match="plaintext"):
                helper("assay.example.com:50053", [], creds)

    @pytest.mark.parametrize("client", CLIENTS[:3], ids=lambda c: c.__name__)
    def test_credentials_with_a_caller_owned_channel_are_refused(self, client: type[Any]) -> None:
        """The channel decided its transport already: credentials belong to the channel helper,
        and silently not sending a token would be worse than saying so."""
        channel = grpc.insecure_channel("127.0.0.1:1")
        try:
            with pytest.raises(ValueError, match="channel you own"):
                client(channel, credentials=Credentials(token=TOKEN))
        finally:
            channel.close()


class TestTokenFile:
    def test_a_rotated_file_is_read_on_the_next_use(self, tmp_path: Path) -> None:
        """Replaced by rename or rewritten in place: the next ``metadata()`` has the new token."""
        path = tmp_path / "token.jwt"
        path.write_text("first\n", encoding="ascii")
        tokens = TokenFile(path)
        assert tokens.metadata() == (("authorization", "Bearer first"),)
        fresh = tmp_path / "token.new"
        fresh.write_text("second", encoding="ascii")
        os.replace(fresh, path)
        assert tokens.token() == "second"
        path.write_text("third-and-longer", encoding="ascii")
        assert tokens.token() == "third-and-longer"

    @pytest.mark.parametrize("content", ["", "half written", "\n"])
    def test_a_file_mid_rewrite_keeps_the_last_good_token(
        self, tmp_path: Path, content: str
    ) -> None:
        """Empty or not one token: the previous token stays in use."""
        path = tmp_path / "token.jwt"
        path.write_text("good", encoding="ascii")
        tokens = TokenFile(path)
        path.write_text(content, encoding="ascii")
        assert tokens.token() == "good"

    def test_a_deleted_file_keeps_the_last_good_token(self, tmp_path: Path) -> None:
        """A rotation that unlinks first does not leave the caller without a token."""
        path = tmp_path / "token.jwt"
        path.write_text("good", encoding="ascii")
        tokens = TokenFile(path)
        path.unlink()
        assert tokens.token() == "good"

    def test_an_unusable_file_at_the_start_is_a_value_error(self, tmp_path: Path) -> None:
        """Missing or empty at construction: fail now, naming the file."""
        with pytest.raises(ValueError, match="cannot read token file"):
            TokenFile(tmp_path / "missing.jwt")
        empty = tmp_path / "empty.jwt"
        empty.write_text("", encoding="ascii")
        with pytest.raises(ValueError, match=r"empty\.jwt"):
            TokenFile(empty)

    def test_the_repr_shows_the_path_not_the_token(self, tmp_path: Path) -> None:
        path = tmp_path / "token.jwt"
        path.write_text(TOKEN, encoding="ascii")
        assert TOKEN not in repr(TokenFile(path))


class TestAddresses:
    @pytest.mark.parametrize(
        ("target", "host", "loopback"),
        [
            ("127.0.0.1:50051", "127.0.0.1", True),
            ("127.8.9.10:1", "127.8.9.10", True),
            ("localhost:50051", "localhost", True),
            ("LOCALHOST:50051", "LOCALHOST", True),
            ("[::1]:50051", "::1", True),
            ("ipv4:127.0.0.1:50051", "127.0.0.1", True),
            ("dns:///localhost:50051", "localhost", True),
            ("0.0.0.0:50051", "0.0.0.0", False),
            ("10.1.2.3:50051", "10.1.2.3", False),
            ("[2001:db8::1]:443", "2001:db8::1", False),
            ("assay.example.com:443", "assay.example.com", False),
            ("localhost.example.com:443", "localhost.example.com", False),
        ],
    )
    def test_the_host_of_a_target_and_whether_it_is_this_machine(
        self, target: str, host: str, loopback: bool
    ) -> None:
        """Names, IPv4, bracketed IPv6 and gRPC URI schemes; 0.0.0.0 is every interface."""
        assert target_host(target) == host
        assert is_loopback(host) is loopback

"""The rules that decide whether a server may start: loopback or not, plaintext or TLS,
authenticated or dev mode; and the checks that read TLS files once at start."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from assay.runtime.auth import DEV_GATE, Gate
from assay.runtime.auth.dev_credentials import make_ca, make_leaf
from assay.runtime.auth.policy import AuthPolicy
from assay.runtime.config import env_bool
from assay.runtime.security import unauthenticated_refusal
from assay.runtime.tls import (
    ClientTls,
    ServerTls,
    dial_host,
    plaintext_refusal,
    resolver_plaintext_refusal,
)
from assay.transport import is_loopback, target_host

NOW = dt.datetime.now(dt.UTC)
DAY = dt.timedelta(days=1)
LOOPBACK = ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST", " localhost "]
NOT_LOOPBACK = ["0.0.0.0", "::", "[::]", "10.0.0.1", "192.168.1.5", "assay.example.com", ""]
AN_AUTHENTICATING_GATE = Gate(AuthPolicy(grants=(), tokens=None), client_certificates=True)


class TestIsLoopback:
    @pytest.mark.parametrize("host", LOOPBACK)
    def test_loopback(self, host: str) -> None:
        """Loopback addresses (v4 range, v6, bracketed v6) and localhost are this machine."""
        assert is_loopback(host)

    @pytest.mark.parametrize("host", NOT_LOOPBACK)
    def test_not_loopback(self, host: str) -> None:
        """Wildcards, private addresses and other names are not (a name is never resolved)."""
        assert not is_loopback(host)


class TestTargetHost:
    @pytest.mark.parametrize(
        ("target", "host"),
        [
            ("127.0.0.1:50051", "127.0.0.1"),
            ("localhost:50051", "localhost"),
            ("[::1]:50051", "::1"),
            ("::1", "::1"),
            ("dns:///localhost:50051", "localhost"),
            ("ipv4:10.0.0.1:50051", "10.0.0.1"),
            ("assay.example.com:443", "assay.example.com"),
            ("assay.example.com", "assay.example.com"),
        ],
    )
    def test_host_of_target(self, target: str, host: str) -> None:
        """The host part of each gRPC target form."""
        assert target_host(target) == host


class TestPlaintextRefusal:
    @pytest.mark.parametrize("host", LOOPBACK)
    def test_loopback_may_serve_plaintext(self, host: str) -> None:
        """Plaintext on loopback needs no flag."""
        assert plaintext_refusal(host, None, insecure_plaintext=False) is None

    @pytest.mark.parametrize("host", NOT_LOOPBACK)
    def test_elsewhere_plaintext_is_refused_in_one_line(self, host: str) -> None:
        """Off loopback, plaintext is refused with one line naming the host and the flags."""
        refusal = plaintext_refusal(host, None, insecure_plaintext=False)
        assert refusal is not None
        assert "\n" not in refusal
        assert f"address {host}:" in refusal
        assert "--insecure-plaintext" in refusal
        assert "--tls-cert" in refusal

    @pytest.mark.parametrize("host", NOT_LOOPBACK)
    def test_tls_or_the_flag_allows_it(self, host: str, tmp_path: Path) -> None:
        """TLS, or --insecure-plaintext said out loud, lifts the refusal."""
        tls = ServerTls(tmp_path / "cert.pem", tmp_path / "key.pem")
        assert plaintext_refusal(host, tls, insecure_plaintext=False) is None
        assert plaintext_refusal(host, None, insecure_plaintext=True) is None


class TestResolverPlaintextRefusal:
    @pytest.mark.parametrize("target", ["127.0.0.1:50051", "localhost:1", "[::1]:2", "unix:/s"])
    def test_local_resolver_may_be_called_in_plaintext(self, target: str) -> None:
        """The planner may call a resolver on this machine without TLS."""
        assert resolver_plaintext_refusal(target, None, insecure_plaintext=False) is None

    @pytest.mark.parametrize("target", ["10.0.0.1:50051", "resolver.internal:50051"])
    def test_remote_resolver_needs_tls_or_the_flag(self, target: str) -> None:
        """A remote resolver in plaintext is refused, naming the target and the flags."""
        refusal = resolver_plaintext_refusal(target, None, insecure_plaintext=False)
        assert refusal is not None
        assert target in refusal
        assert "--resolver-ca" in refusal
        assert "--insecure-plaintext" in refusal
        assert resolver_plaintext_refusal(target, ClientTls(), insecure_plaintext=False) is None
        assert resolver_plaintext_refusal(target, None, insecure_plaintext=True) is None


class TestUnauthenticatedRefusal:
    @pytest.mark.parametrize("host", LOOPBACK)
    def test_dev_mode_on_loopback_is_allowed(self, host: str) -> None:
        """Dev mode is the quick start: allowed on loopback."""
        assert unauthenticated_refusal(host, DEV_GATE, insecure_no_auth=False) is None

    @pytest.mark.parametrize("host", NOT_LOOPBACK)
    def test_dev_mode_elsewhere_is_refused(self, host: str) -> None:
        """Off loopback, dev mode needs --insecure-no-auth (TLS alone does not lift it)."""
        refusal = unauthenticated_refusal(host, DEV_GATE, insecure_no_auth=False)
        assert refusal is not None
        assert "--insecure-no-auth" in refusal
        assert "--auth-policy" in refusal
        assert unauthenticated_refusal(host, DEV_GATE, insecure_no_auth=True) is None

    @pytest.mark.parametrize("host", NOT_LOOPBACK)
    def test_an_authenticating_gate_may_serve_anywhere(self, host: str) -> None:
        """With callers authenticated, the address does not matter to this rule."""
        assert unauthenticated_refusal(host, AN_AUTHENTICATING_GATE, False) is None


class TestDialHost:
    @pytest.mark.parametrize(
        ("host", "dial"),
        [
            ("0.0.0.0", "127.0.0.1"),
            ("", "127.0.0.1"),
            ("::", "[::1]"),
            ("[::]", "[::1]"),
            ("::1", "[::1]"),
            ("127.0.0.1", "127.0.0.1"),
            ("10.0.0.1", "10.0.0.1"),
            ("localhost", "localhost"),
        ],
    )
    def test_how_a_listening_address_is_dialled(self, host: str, dial: str) -> None:
        """Wildcards are dialled on loopback; IPv6 addresses get brackets."""
        assert dial_host(host) == dial


def _pem_key(key: ec.EllipticCurvePrivateKey, password: bytes | None = None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password)
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A CA, a server pair, a client pair, an expired pair and an encrypted key, on disk."""
    ca_key, ca_cert = make_ca("Test CA", NOW, DAY)
    server_key, server_cert = make_leaf(ca_key, ca_cert, "localhost", NOW, DAY, ["localhost"])
    client_key, client_cert = make_leaf(ca_key, ca_cert, "bot", NOW, DAY, client=True)
    old_key, old_cert = make_leaf(ca_key, ca_cert, "old", NOW - 10 * DAY, DAY, ["localhost"])
    pem = serialization.Encoding.PEM
    contents = {
        "ca.pem": ca_cert.public_bytes(pem),
        "server.pem": server_cert.public_bytes(pem),
        "server-key.pem": _pem_key(server_key),
        "client.pem": client_cert.public_bytes(pem),
        "client-key.pem": _pem_key(client_key),
        "old.pem": old_cert.public_bytes(pem),
        "old-key.pem": _pem_key(old_key),
        "locked-key.pem": _pem_key(server_key, b"secret"),
        "not-pem.txt": b"hello\n",
    }
    for name, data in contents.items():
        (tmp_path / name).write_bytes(data)
    return {name: tmp_path / name for name in contents} | {"missing": tmp_path / "missing.pem"}


class TestServerTlsCheck:
    def test_a_matching_pair_and_ca_pass(self, files: dict[str, Path]) -> None:
        """A certificate, its own key and a client CA are accepted."""
        ServerTls(files["server.pem"], files["server-key.pem"], files["ca.pem"]).check()

    @pytest.mark.parametrize(
        ("cert", "key", "client_ca", "message"),
        [
            ("server.pem", "client-key.pem", None, "does not belong to certificate"),
            ("missing", "server-key.pem", None, "cannot read TLS certificate"),
            ("server.pem", "missing", None, "cannot read TLS key"),
            ("not-pem.txt", "server-key.pem", None, "holds no PEM certificate"),
            ("server.pem", "not-pem.txt", None, "is not a PEM private key"),
            ("server.pem", "locked-key.pem", None, "is encrypted"),
            ("old.pem", "old-key.pem", None, "expired on"),
            ("server.pem", "server-key.pem", "not-pem.txt", "client CA"),
            ("server.pem", "server-key.pem", "missing", "cannot read client CA"),
        ],
    )
    def test_a_bad_file_names_itself(
        self,
        files: dict[str, Path],
        cert: str,
        key: str,
        client_ca: str | None,
        message: str,
    ) -> None:
        """Each unusable file is one ValueError naming the problem."""
        tls = ServerTls(files[cert], files[key], files[client_ca] if client_ca else None)
        with pytest.raises(ValueError, match=message):
            tls.check()


class TestClientTlsCheck:
    def test_trust_and_a_client_pair_pass(self, files: dict[str, Path]) -> None:
        """A CA and a client certificate with its key are accepted; so is trusting nothing."""
        ClientTls(files["ca.pem"], files["client.pem"], files["client-key.pem"]).check()
        ClientTls().check()

    def test_a_certificate_without_its_key_is_refused(self, files: dict[str, Path]) -> None:
        """Half a client pair is refused."""
        with pytest.raises(ValueError, match="needs its key"):
            ClientTls(files["ca.pem"], cert=files["client.pem"]).check()

    def test_a_bad_ca_is_refused(self, files: dict[str, Path]) -> None:
        """A CA file that holds no certificate is refused."""
        with pytest.raises(ValueError, match=r"CA .* holds no PEM certificate"):
            ClientTls(files["not-pem.txt"]).check()


class TestEnvSwitch:
    @pytest.mark.parametrize(
        ("raw", "value"),
        [("", False), ("0", False), ("off", False), ("1", True), ("TRUE", True), ("yes", True)],
    )
    def test_switch_words(self, raw: str, value: bool, monkeypatch: pytest.MonkeyPatch) -> None:
        """ASSAY_* switches read 1/0, true/false, yes/no, on/off; empty is off."""
        monkeypatch.setenv("ASSAY_TEST_SWITCH", raw)
        assert env_bool("ASSAY_TEST_SWITCH") is value

    def test_another_word_stops_with_its_name(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A value that is not a switch word stops the command, naming the variable."""
        monkeypatch.setenv("ASSAY_TEST_SWITCH", "maybe")
        with pytest.raises(SystemExit, match="ASSAY_TEST_SWITCH"):
            env_bool("ASSAY_TEST_SWITCH")

"""The rules over targets that name several replicas: every address must be loopback for
plaintext to count as local, and TLS must know the one name it verifies."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.cli.common import CliError
from assay.cli.main import build_parser
from assay.cli.serve_security import resolve_security
from assay.client.channel import service_config
from assay.client.credentials import Credentials
from assay.runtime.auth.dev_credentials import write_dev_credentials
from assay.runtime.tls import resolver_plaintext_refusal
from assay.transport import (
    authority_options,
    is_local_target,
    needs_server_name,
    target_addresses,
    target_hosts,
    tls_server_name,
)
from assay.v1 import resolver_service_pb2 as rs

TWO_LOCAL = "ipv4:127.0.0.1:50061,127.0.0.1:50062"
MIXED = "ipv4:127.0.0.1:50061,10.0.0.6:50062"
TWO_REMOTE = "ipv4:10.0.0.5:50051,10.0.0.6:50051"


class TestTargetAddresses:
    @pytest.mark.parametrize(
        ("target", "hosts"),
        [
            ("127.0.0.1:50051", ("127.0.0.1",)),
            ("dns:///resolver:50051", ("resolver",)),
            ("dns://10.0.0.2/resolver.ns.svc:50051", ("resolver.ns.svc",)),
            ("dns:resolver:50051", ("resolver",)),
            (TWO_LOCAL, ("127.0.0.1", "127.0.0.1")),
            ("ipv4:127.0.0.1:50061, 127.0.0.1:50062,", ("127.0.0.1", "127.0.0.1")),
            ("ipv6:[::1]:50061,[::1]:50062", ("::1", "::1")),
            (MIXED, ("127.0.0.1", "10.0.0.6")),
        ],
    )
    def test_every_host_of_a_target(self, target: str, hosts: tuple[str, ...]) -> None:
        """Schemes, DNS authorities and comma-separated address lists."""
        assert target_hosts(target) == hosts
        assert len(target_addresses(target)) == len(hosts)

    @pytest.mark.parametrize(
        ("target", "local"),
        [
            (TWO_LOCAL, True),
            ("ipv6:[::1]:1,[::1]:2", True),
            ("dns:///localhost:50051", True),
            (MIXED, False),
            (TWO_REMOTE, False),
            ("dns:///resolver:50051", False),
            ("ipv4:", False),
        ],
    )
    def test_local_only_when_every_address_is(self, target: str, local: bool) -> None:
        """One remote address among loopback ones makes the whole target remote."""
        assert is_local_target(target) is local

    def test_plaintext_to_a_mixed_list_is_refused(self) -> None:
        """The planner's plaintext rule applies to each address of the list."""
        assert resolver_plaintext_refusal(TWO_LOCAL, None, insecure_plaintext=False) is None
        refusal = resolver_plaintext_refusal(MIXED, None, insecure_plaintext=False)
        assert refusal is not None
        assert MIXED in refusal

    def test_a_token_in_plaintext_to_a_mixed_list_is_refused(self) -> None:
        """The client's token rule too."""
        Credentials(token="abc").check_target(TWO_LOCAL)
        with pytest.raises(ValueError, match="plaintext"):
            Credentials(token="abc").check_target(MIXED)


class TestTlsServerName:
    @pytest.mark.parametrize(
        ("target", "name", "needed"),
        [
            ("resolver:50051", None, False),
            ("dns:///resolver:50051", None, False),
            ("ipv4:10.0.0.5:50051", "10.0.0.5", False),
            (TWO_LOCAL, "127.0.0.1", False),
            ("ipv6:[::1]:1,[::1]:2", "[::1]", False),
            (TWO_REMOTE, None, True),
        ],
    )
    def test_the_name_tls_verifies(self, target: str, name: str | None, needed: bool) -> None:
        """One host verifies itself; several hosts need a name given; DNS names are gRPC's."""
        assert tls_server_name(target) == name
        assert needs_server_name(target) is needed

    def test_authority_options(self) -> None:
        """A given name wins; plaintext sets nothing; no name for several hosts is refused."""
        assert authority_options(TWO_REMOTE, tls=False) == []
        assert authority_options(TWO_REMOTE, True, "resolver.internal") == [
            ("grpc.default_authority", "resolver.internal")
        ]
        assert authority_options(TWO_LOCAL, True) == [("grpc.default_authority", "127.0.0.1")]
        assert authority_options("dns:///resolver:50051", True) == []
        with pytest.raises(ValueError, match="server name"):
            authority_options(TWO_REMOTE, True)

    def test_client_service_config_balances_round_robin(self) -> None:
        """Every client channel's service config picks round_robin."""
        config = service_config([rs.DESCRIPTOR.services_by_name["ResolverService"]])
        assert config["loadBalancingConfig"] == [{"round_robin": {}}]
        assert config["methodConfig"]


class TestServeResolverFlag:
    def _resolve(self, *argv: str) -> None:
        args = build_parser().parse_args(["serve", "planner", *argv])
        resolve_security(args, True, args.resolver, up=False)

    def test_a_local_list_serves_plaintext(self) -> None:
        """Plaintext to a list of loopback addresses needs no flag."""
        self._resolve("--resolver", TWO_LOCAL)

    def test_a_mixed_list_in_plaintext_is_one_line(self) -> None:
        """A remote address in the list: refused, exit code 2."""
        with pytest.raises(CliError) as caught:
            self._resolve("--resolver", MIXED)
        assert caught.value.exit_code == 2

    def test_tls_over_several_hosts_needs_the_server_name(self, tmp_path: Path) -> None:
        """TLS to replicas on several hosts: refused without --resolver-server-name."""
        creds = write_dev_credentials(tmp_path / "creds", ())
        with pytest.raises(CliError, match="--resolver-server-name"):
            self._resolve("--resolver", TWO_REMOTE, "--resolver-ca", str(creds.ca))
        self._resolve(
            "--resolver",
            TWO_REMOTE,
            "--resolver-ca",
            str(creds.ca),
            "--resolver-server-name",
            "localhost",
        )

    def test_a_server_name_without_tls_is_refused(self) -> None:
        """A name to verify with nothing verifying it is a mistake, said at start."""
        with pytest.raises(CliError, match="needs TLS"):
            self._resolve("--resolver", TWO_LOCAL, "--resolver-server-name", "localhost")

"""The security flags of ``assay serve`` and ``assay up``: how the servers serve (TLS, who may
call) and how the planner calls the resolver, every file read and checked once at start.

Every flag has an ``ASSAY_*`` twin. ``--credentials DIR`` (a folder ``assay dev-credentials``
wrote) turns on TLS, token verification and the policy in one flag, and gives the planner its
own credential for the resolver; an explicit flag overrides the part it names. A set that
cannot work (a certificate without its key, a JWKS without a policy, an unreadable or malformed
file) is one line and exit code 2 before anything listens, as is serving plaintext or without
authentication off loopback unless the matching ``--insecure-…`` flag says so.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from assay.cli.common import CliError
from assay.runtime.auth import Gate
from assay.runtime.auth.dev_credentials import DevCredentials
from assay.runtime.config import env_bool, env_path
from assay.runtime.security import DEV_MODE_WARNING, Security, unauthenticated_refusal
from assay.runtime.tls import (
    ClientTls,
    ServerTls,
    plaintext_refusal,
    resolver_plaintext_refusal,
)
from assay.transport import authority_options, read_token

# The exit code of a configuration a server cannot start with (argparse uses it for usage).
CONFIG_EXIT_CODE = 2
# ``--resolver-ca system``: TLS to the resolver, trusting the system's roots.
SYSTEM_ROOTS = "system"


@dataclass(frozen=True)
class ServingSecurity:
    """What the flags resolved to: the servers' and planner's settings, and what to warn about."""

    security: Security
    allow_fixture_reviewers: bool
    warnings: tuple[str, ...]


# (flag, environment twin, metavar or None for a switch, help)
_Flag = tuple[str, str, str | None, str]

_SERVER_FLAGS: tuple[_Flag, ...] = (
    ("--credentials", "ASSAY_CREDENTIALS", "DIR",
     "TLS, token verification and the auth policy from a folder `assay dev-credentials` wrote, "
     "and the planner's own resolver credential; explicit flags override parts of it"),
    ("--tls-cert", "ASSAY_TLS_CERT", "FILE",
     "PEM certificate (chain) to serve TLS with; needs --tls-key"),
    ("--tls-key", "ASSAY_TLS_KEY", "FILE", "PEM private key of --tls-cert"),
    ("--tls-client-ca", "ASSAY_TLS_CLIENT_CA", "FILE",
     "mutual TLS: require a client certificate signed by this CA; its CN is the subject "
     "under issuer \"x509\" in --auth-policy"),
    ("--auth-policy", "ASSAY_AUTH_POLICY", "FILE",
     "TOML or JSON file mapping principals to roles and tenants; turns authentication on"),
    ("--jwks", "ASSAY_JWKS", "FILE",
     "JWKS that bearer tokens are verified against (default: the policy's [tokens] jwks)"),
    ("--allow-fixture-reviewers", "ASSAY_ALLOW_FIXTURE_REVIEWERS", None,
     "with authentication on, let operators register MECHANISM_TEST_FIXTURE reviewers "
     "(always allowed in dev mode)"),
    ("--ledger-signing-key", "ASSAY_LEDGER_SIGNING_KEY", "FILE",
     "adjudication: the Ed25519 key (PKCS#8 PEM) that signs the audit log's checkpoints "
     "(default: <db>.ledger-key.pem beside the database, created 0600 on first start); "
     "refused when group or others may read or write it"),
    ("--insecure-plaintext", "ASSAY_INSECURE_PLAINTEXT", None,
     "allow serving, and calling the resolver, without TLS on a non-loopback address "
     "(warned at every start)"),
    ("--insecure-no-auth", "ASSAY_INSECURE_NO_AUTH", None,
     "allow dev mode (no authentication: every caller holds every role for every tenant) "
     "on a non-loopback address"),
)  # fmt: skip


def _resolver_flags(up: bool) -> tuple[_Flag, ...]:
    ca_default = (
        "default: the --tls-cert file itself (the planner pins the certificate the resolver "
        "serves), or DIR/ca.pem with --credentials"
        if up
        else "default: DIR/ca.pem with --credentials, else plaintext"
    )
    return (
        ("--resolver-ca", "ASSAY_RESOLVER_CA", "FILE",
         f"CA (or certificate) to trust for the resolver, turning TLS on for that channel; "
         f"'{SYSTEM_ROOTS}' trusts the system's roots; {ca_default}"),
        ("--resolver-token-file", "ASSAY_RESOLVER_TOKEN_FILE", "FILE",
         "the planner's own bearer token for the resolver, re-read when it changes "
         "(default: DIR/tokens/planner.jwt with --credentials)"),
        ("--resolver-client-cert", "ASSAY_RESOLVER_CLIENT_CERT", "FILE",
         "the planner's client certificate, for a resolver requiring mutual TLS"),
        ("--resolver-client-key", "ASSAY_RESOLVER_CLIENT_KEY", "FILE",
         "the key of --resolver-client-cert"),
        ("--resolver-server-name", "ASSAY_RESOLVER_SERVER_NAME", "NAME",
         "with TLS, the name every resolver replica's certificate carries, checked on each; "
         "needed when --resolver lists addresses of several hosts (ipv4:A:PORT,B:PORT), "
         "which have no one name to verify (default: the target's own name)"),
    )  # fmt: skip


def _add(group: argparse._ArgumentGroup, flags: tuple[_Flag, ...]) -> None:
    for flag, env, metavar, text in flags:
        if metavar is None:
            group.add_argument(
                flag, action="store_true", default=env_bool(env), help=f"{text} (env {env})"
            )
        else:
            group.add_argument(
                flag, metavar=metavar, default=env_path(env), help=f"{text} (env {env})"
            )


def add_security_arguments(parser: argparse.ArgumentParser, up: bool) -> None:
    """The TLS and authentication flags, and the planner's flags for its resolver channel."""
    _add(
        parser.add_argument_group(
            "security",
            "without any of these: dev mode (no TLS, every caller holds every role), loopback only",
        ),
        _SERVER_FLAGS,
    )
    callee = "the resolver started here" if up else "the resolver (planner only)"
    _add(
        parser.add_argument_group("planner to resolver", f"how the planner calls {callee}"),
        _resolver_flags(up),
    )


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _pair(cert: str | None, key: str | None, flags: str) -> tuple[Path, Path] | None:
    if bool(cert) != bool(key):
        raise ValueError(f"{flags} go together: give both")
    return (Path(cert), Path(key)) if cert and key else None


def _server_tls(args: argparse.Namespace, base: Security) -> ServerTls | None:
    pair = _pair(args.tls_cert, args.tls_key, "--tls-cert and --tls-key")
    client_ca = _path(args.tls_client_ca)
    if pair is not None:
        return ServerTls(*pair, client_ca=client_ca)
    if base.tls is not None:
        return dataclasses.replace(base.tls, client_ca=client_ca)
    if client_ca is not None:
        raise ValueError("--tls-client-ca needs --tls-cert and --tls-key (or --credentials DIR)")
    return None


def _gate(args: argparse.Namespace, base: Security, tls: ServerTls | None) -> Gate:
    folder = DevCredentials(Path(args.credentials)) if args.credentials else None
    client_certificates = tls is not None and tls.client_ca is not None
    if folder is not None and not (args.auth_policy or args.jwks or client_certificates):
        return base.gate
    # An explicit policy names its own JWKS; the folder's jwks.json goes with the folder's policy.
    policy = _path(args.auth_policy) or (folder.policy if folder else None)
    jwks = _path(args.jwks) or (folder.jwks if folder and not args.auth_policy else None)
    return Gate.from_files(policy, jwks, client_certificates=client_certificates)


def _resolver_tls(
    args: argparse.Namespace, base: Security, tls: ServerTls | None, up: bool
) -> ClientTls | None:
    pair = _pair(
        args.resolver_client_cert,
        args.resolver_client_key,
        "--resolver-client-cert and --resolver-client-key",
    )
    cert, key = pair if pair else (None, None)
    if up and tls is None:
        if args.resolver_ca or pair:
            raise ValueError(
                "--resolver-ca and --resolver-client-cert need TLS: in `assay up` the planner "
                "calls the resolver started here, which serves plaintext without --tls-cert "
                "and --tls-key (or --credentials DIR)"
            )
        return None
    if args.resolver_ca:
        ca = None if args.resolver_ca == SYSTEM_ROOTS else Path(args.resolver_ca)
    elif up and args.tls_cert:
        ca = Path(args.tls_cert)  # the certificate the in-process resolver serves, pinned
    elif base.peer_tls is not None:
        ca = base.peer_tls.ca
    elif pair is None:
        return None
    else:
        ca = None
    return ClientTls(ca, cert, key, server_name=args.resolver_server_name or None)


def _planner_credentials(
    args: argparse.Namespace, base: Security, tls: ServerTls | None, gate: Gate, up: bool
) -> tuple[ClientTls | None, Path | None]:
    peer_tls = _resolver_tls(args, base, tls, up)
    if peer_tls is not None:
        peer_tls.check()
    token = _path(args.resolver_token_file) or base.peer_token
    if token is not None:
        read_token(token)
    if up and tls is not None and tls.client_ca is not None and peer_tls and not peer_tls.cert:
        raise ValueError(
            "with --tls-client-ca, `assay up` needs the planner's own client certificate for "
            "the resolver: --resolver-client-cert and --resolver-client-key"
        )
    if up and gate.enabled and token is None and not (tls and tls.client_ca):
        raise ValueError(
            "with authentication on, `assay up` needs the planner's own credential for the "
            "resolver: --resolver-token-file FILE (a token whose principal holds the service role)"
        )
    return peer_tls, token


def _check_resolver_name(
    args: argparse.Namespace, resolver_target: str, peer_tls: ClientTls | None
) -> None:
    """A resolver target listing several hosts needs the name TLS verifies; a name without
    TLS would verify nothing, so it is refused rather than silently ignored."""
    if args.resolver_server_name and peer_tls is None:
        raise ValueError(
            "--resolver-server-name needs TLS to the resolver (--resolver-ca or --credentials)"
        )
    try:
        authority_options(
            resolver_target, peer_tls is not None, peer_tls.server_name if peer_tls else None
        )
    except ValueError as error:
        raise ValueError(f"--resolver: {error}; give --resolver-server-name NAME") from None


def _resolve(
    args: argparse.Namespace, serves_planner: bool, resolver_target: str, up: bool
) -> ServingSecurity:
    if args.credentials:
        if not Path(args.credentials).is_dir():
            raise ValueError(
                f"--credentials: there is no folder {args.credentials} "
                "(write one with `assay dev-credentials DIR`)"
            )
        try:
            base = Security.from_credentials(Path(args.credentials))
        except ValueError as error:
            raise ValueError(f"--credentials: {error}") from None
    else:
        base = Security()
    tls = _server_tls(args, base)
    if tls is not None:
        tls.check()
    gate = _gate(args, base, tls)
    refusal = plaintext_refusal(args.host, tls, args.insecure_plaintext) or (
        unauthenticated_refusal(args.host, gate, args.insecure_no_auth)
    )
    if refusal:
        raise ValueError(refusal)
    peer_tls, token = None, None
    if serves_planner:
        peer_tls, token = _planner_credentials(args, base, tls, gate, up)
        refusal = resolver_plaintext_refusal(resolver_target, peer_tls, args.insecure_plaintext)
        if refusal:
            raise ValueError(refusal)
        _check_resolver_name(args, resolver_target, peer_tls)
    warnings = []
    if not gate.enabled:
        warnings.append(DEV_MODE_WARNING)
    if args.insecure_plaintext and tls is None:
        warnings.append(
            f"WARNING: --insecure-plaintext: serving without TLS on {args.host}; tokens "
            "and data cross the network unencrypted"
        )
    return ServingSecurity(
        security=Security(tls=tls, gate=gate, peer_tls=peer_tls, peer_token=token),
        # Dev mode admits everyone as everyone, so fixture reviewers hide nothing there.
        allow_fixture_reviewers=args.allow_fixture_reviewers or not gate.enabled,
        warnings=tuple(warnings),
    )


def resolve_security(
    args: argparse.Namespace, serves_planner: bool, resolver_target: str, up: bool
) -> ServingSecurity:
    """The flags as settings; ``CliError`` (exit code 2, one line) when they cannot work.

    ``up``: the planner calls the resolver this process serves, at ``resolver_target``."""
    try:
        return _resolve(args, serves_planner, resolver_target, up)
    except ValueError as error:
        raise CliError(str(error), exit_code=CONFIG_EXIT_CODE) from None

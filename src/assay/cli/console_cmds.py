"""The console's flags, for ``assay serve console`` and ``assay up``, turned into its settings.

Every flag has an ``ASSAY_*`` twin. The console holds no credential of its own: it calls the
services with each signed-in person's token, so what it is told is where they are, what to
trust, and how people sign in. ``--credentials DIR`` gives all three at once on this machine:
HTTPS with DIR's server certificate, TLS to the services with DIR's CA, and the dev sign-in
offering DIR's example principals (loopback only). Without credentials the services
authenticate nobody (dev mode), and on loopback a person signs in by typing a name.

``assay up`` serves the console by default; when its defaults cannot work (the services
ask for client certificates, or nobody could sign in) it says why in one line and serves
the services alone, while a console flag given outright that cannot work is exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from assay.cli.common import CliError
from assay.cli.serve_security import CONFIG_EXIT_CODE, ServingSecurity
from assay.console.settings import DEFAULT_PORT, ConsoleSettings
from assay.runtime.auth.dev_credentials import DevCredentials
from assay.runtime.config import env_bool, env_int, env_path, env_str
from assay.transport import is_local_target, is_loopback

DEV_MODE_WARNING = (
    "WARNING: the console is in dev mode: a person signs in by typing the name to act as "
    "(loopback only)"
)

# (flag, environment twin, metavar, help): how people sign in and where the console is seen.
_SIGN_IN_FLAGS: tuple[tuple[str, str, str, str], ...] = (
    ("--oidc-issuer", "ASSAY_OIDC_ISSUER", "URL",
     "OpenID Connect issuer people sign in with (discovery at URL/.well-known/"
     "openid-configuration); needs --oidc-client-id"),
    ("--oidc-client-id", "ASSAY_OIDC_CLIENT_ID", "ID", "the console's client id at the issuer"),
    ("--oidc-client-secret-file", "ASSAY_OIDC_CLIENT_SECRET_FILE", "FILE",
     "file holding the console's client secret (default: none, a public client)"),
    ("--public-url", "ASSAY_PUBLIC_URL", "URL",
     "the address people reach the console at, behind a proxy (default: "
     "http(s)://HOST:PORT); the sign-in redirect is built from it"),
    ("--dev-credentials", "ASSAY_DEV_CREDENTIALS", "DIR",
     "offer the example principals of a folder `assay dev-credentials` wrote on the sign-in "
     "page, loopback only (default: DIR of --credentials, on loopback)"),
)  # fmt: skip

# Explicit console flags: when one is given, a console that cannot start is an error.
_EXPLICIT = ("oidc_issuer", "oidc_client_id", "oidc_client_secret_file", "dev_credentials")


def add_console_arguments(parser: argparse.ArgumentParser, up: bool) -> None:
    """The console's flags; ``up`` adds --no-console, ``serve`` the services' addresses."""
    group = parser.add_argument_group(
        "console",
        "the web console (`assay serve console`, and `assay up` unless --no-console)",
    )
    group.add_argument(
        "--console-port",
        type=int,
        default=env_int("ASSAY_CONSOLE_PORT", DEFAULT_PORT),
        help=f"the console's port (env ASSAY_CONSOLE_PORT; default {DEFAULT_PORT}; "
        "`serve console --port` overrides it)",
    )
    for flag, env, metavar, text in _SIGN_IN_FLAGS:
        group.add_argument(flag, metavar=metavar, default=env_path(env), help=f"{text} (env {env})")
    if up:
        group.add_argument(
            "--no-console",
            action="store_true",
            default=env_bool("ASSAY_NO_CONSOLE"),
            help="serve the services without the console (env ASSAY_NO_CONSOLE)",
        )
        return
    for name, port in (("adjudication", 50053), ("planner", 50052)):
        env = f"ASSAY_{name.upper()}_TARGET"
        group.add_argument(
            f"--{name}",
            metavar="TARGET",
            default=env_str(env, f"127.0.0.1:{port}"),
            help=f"console: where the {name} service is (env {env}; default 127.0.0.1:{port}; "
            "the resolver's is --resolver)",
        )
    group.add_argument(
        "--services-server-name",
        metavar="NAME",
        default=env_str("ASSAY_SERVICES_SERVER_NAME", ""),
        help="console: with TLS, the name the services' certificates carry, checked instead "
        "of each target's own (env ASSAY_SERVICES_SERVER_NAME)",
    )
    group.add_argument(
        "--services-ca",
        metavar="FILE",
        default=env_path("ASSAY_SERVICES_CA"),
        help="console: CA (or certificate) the services' TLS certificates chain to, turning "
        "TLS on for its calls (env ASSAY_SERVICES_CA; default DIR/ca.pem with --credentials, "
        "else plaintext)",
    )


@dataclass(frozen=True)
class ConsolePlan:
    """The console to serve beside the services, or why it is left out."""

    settings: ConsoleSettings | None
    warnings: tuple[str, ...] = ()


def _sign_in(args: argparse.Namespace, credentials: Path | None) -> ConsoleSettings:
    """Settings carrying how people sign in (the rest default): OIDC as given; the dev
    sign-in from --dev-credentials, else from the --credentials folder on loopback."""
    dev = args.dev_credentials or (
        credentials if credentials and is_loopback(args.host) and not args.oidc_issuer else None
    )
    if dev is not None and not Path(dev).is_dir():
        raise ValueError(
            f"--dev-credentials: there is no folder {dev} (write one with "
            "`assay dev-credentials DIR`)"
        )
    secret = args.oidc_client_secret_file
    return ConsoleSettings(
        oidc_issuer=args.oidc_issuer or "",
        oidc_client_id=args.oidc_client_id or "",
        oidc_client_secret_file=Path(secret) if secret else None,
        public_url=args.public_url or "",
        dev_credentials=Path(dev) if dev else None,
    )


def _no_sign_in(settings: ConsoleSettings) -> bool:
    """Whether no way to sign in was given (then dev mode, where the services allow it)."""
    return not settings.oidc_issuer and settings.dev_credentials is None


def _readable(path: Path | None, flag: str) -> None:
    if path is not None and not path.is_file():
        raise ValueError(f"{flag}: cannot read {path}")


def _check(settings: ConsoleSettings) -> ConsoleSettings:
    settings.check()
    _readable(settings.ca, "the services' CA")
    _readable(settings.tls_cert, "--tls-cert")
    _readable(settings.tls_key, "--tls-key")
    _readable(settings.oidc_client_secret_file, "--oidc-client-secret-file")
    return settings


def for_serve(args: argparse.Namespace, port: int) -> ConsoleSettings:
    """``assay serve console``'s settings; ``CliError`` (exit code 2) when they cannot work."""
    try:
        credentials = Path(args.credentials) if args.credentials else None
        folder = DevCredentials(credentials) if credentials else None
        if credentials is not None and not credentials.is_dir():
            raise ValueError(f"--credentials: there is no folder {credentials}")
        if bool(args.tls_cert) != bool(args.tls_key):
            raise ValueError("--tls-cert and --tls-key go together: give both")
        cert = Path(args.tls_cert) if args.tls_cert else (folder.server_cert if folder else None)
        key = Path(args.tls_key) if args.tls_key else (folder.server_key if folder else None)
        ca = Path(args.services_ca) if args.services_ca else (folder.ca if folder else None)
        sign_in = _sign_in(args, credentials)
        targets = {
            "adjudication": args.adjudication,
            "planner": args.planner,
            "resolver": args.resolver,
        }
        if args.services_server_name and ca is None:
            raise ValueError(
                "--services-server-name needs TLS to the services (--services-ca or --credentials)"
            )
        if ca is None and not args.insecure_plaintext:
            for name, target in targets.items():
                if not is_local_target(target):
                    raise ValueError(
                        f"refusing to call the {name} at {target} in plaintext: give "
                        "--services-ca FILE (or --credentials DIR), or --insecure-plaintext "
                        "to accept the risk"
                    )
        return _check(
            dataclasses.replace(
                sign_in,
                host=args.host,
                port=port,
                ca=ca,
                tls_cert=cert,
                tls_key=key,
                services_server_name=args.services_server_name,
                dev_mode=credentials is None and _no_sign_in(sign_in),
                adjudication=args.adjudication,
                planner=args.planner,
                resolver=args.resolver,
            )
        )
    except ValueError as error:
        raise CliError(str(error), exit_code=CONFIG_EXIT_CODE) from None


def for_up(
    args: argparse.Namespace, serving: ServingSecurity, targets: dict[str, str]
) -> ConsolePlan:
    """The console ``assay up`` serves beside the services at ``targets``: HTTPS and TLS to
    them when they serve TLS, trusting what the planner trusts for the resolver."""
    if args.no_console:
        return ConsolePlan(None)
    security = serving.security
    tls = security.tls
    explicit = any(getattr(args, name) for name in _EXPLICIT)
    try:
        if tls is not None and tls.client_ca is not None:
            raise ValueError(
                "the services ask for client certificates (--tls-client-ca), which the console "
                "does not hold"
            )
        credentials = Path(args.credentials) if args.credentials else None
        if tls is None:
            ca = None
        elif args.tls_cert:
            ca = Path(args.tls_cert)  # the certificate the services here serve, pinned
        else:
            ca = DevCredentials(credentials).ca if credentials else None
        sign_in = _sign_in(args, credentials)
        settings = _check(
            dataclasses.replace(
                sign_in,
                host=args.host,
                port=args.console_port,
                ca=ca,
                tls_cert=tls.cert if tls else None,
                tls_key=tls.key if tls else None,
                dev_mode=not security.gate.enabled and _no_sign_in(sign_in),
                adjudication=targets["adjudication"],
                planner=targets["planner"],
                resolver=targets["resolver"],
            )
        )
    except ValueError as error:
        if explicit:
            raise CliError(str(error), exit_code=CONFIG_EXIT_CODE) from None
        return ConsolePlan(
            None, (f"the console is not served: {error} (--no-console says so quietly)",)
        )
    # In dev mode the services' own warning line says that nobody is authenticated.
    return ConsolePlan(settings)

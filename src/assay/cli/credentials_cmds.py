"""``assay dev-credentials DIR``: the second of the two commands to the secure path.

It writes a local CA, a server certificate for localhost, a token signing key
and its JWKS, an auth policy and one token per example principal (see
``assay.runtime.auth.dev_credentials``), then says what each file is for and
what to run next. It prints paths only: never a key or a token.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shlex
from pathlib import Path
from typing import Any

from assay.cli.common import CliError
from assay.runtime.auth.dev_credentials import (
    EXAMPLE_PRINCIPALS,
    DevCredentials,
    write_dev_credentials,
)

DEFAULT_LIFETIME_DAYS = 30
MAX_LIFETIME_DAYS = 3650
GRPCURL_EXAMPLE_BODY = (
    '{"evidence": {"claims": [{"subject": "api:x", "predicate": "retries.mode", '
    '"value": "safe", "source": "api_spec", "confidence": 0.9}]}, '
    '"subject": "api:x", "predicate": "retries.mode"}'
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dev-credentials",
        help="write a local CA, server certificate, JWKS, auth policy and example tokens "
        "for `--credentials DIR` (a developer's machine and tests, not production)",
    )
    parser.add_argument("directory", metavar="DIR", help="folder to write (created owner-only)")
    parser.add_argument(
        "--force", action="store_true", help="overwrite the files of a folder that is not empty"
    )
    parser.add_argument(
        "--lifetime-days",
        type=int,
        default=DEFAULT_LIFETIME_DAYS,
        help=f"how long the certificates and tokens stay valid (default {DEFAULT_LIFETIME_DAYS})",
    )
    parser.set_defaults(handler=_dev_credentials)


def _prepare(root: Path, force: bool) -> None:
    if root.exists() and not root.is_dir():
        raise CliError(f"{root} exists and is not a folder", exit_code=2)
    if root.is_dir() and any(root.iterdir()) and not force:
        raise CliError(
            f"{root} is not empty; give --force to overwrite its credentials", exit_code=2
        )


def _lock_down(creds: DevCredentials) -> None:
    """Owner-only folders, whatever mode an existing folder (or the umask) gave them."""
    for folder in (creds.root, creds.root / "tokens"):
        os.chmod(folder, 0o700)


def _dev_credentials(args: argparse.Namespace) -> int:
    if not 1 <= args.lifetime_days <= MAX_LIFETIME_DAYS:
        raise CliError(f"--lifetime-days must be between 1 and {MAX_LIFETIME_DAYS}", exit_code=2)
    root = Path(args.directory)
    _prepare(root, args.force)
    try:
        creds = write_dev_credentials(root, lifetime=dt.timedelta(days=args.lifetime_days))
        _lock_down(creds)
    except OSError as error:
        raise CliError(f"cannot write {root}: {error.strerror or error}") from None
    _report(creds, args.lifetime_days)
    return 0


def _report(creds: DevCredentials, days: int) -> None:
    q = shlex.quote
    names = ", ".join(who.name for who in EXAMPLE_PRINCIPALS)
    rows = (
        (creds.ca, "CA certificate: what clients trust (grpcurl -cacert, --ca)"),
        (creds.ca_key, "CA private key (owner-only)"),
        (creds.server_cert, "server certificate for localhost, 127.0.0.1 and ::1"),
        (creds.server_key, "its private key (owner-only)"),
        (creds.signing_key, "token signing key (owner-only)"),
        (creds.jwks, "the public key servers verify tokens with"),
        (creds.policy, "which principal holds which roles and tenants"),
        (creds.token_path("NAME"), f"bearer tokens (owner-only), sub = NAME: {names}"),
    )
    width = max(len(str(path)) for path, _ in rows)
    print(f"wrote development credentials to {creds.root} (valid {days} days; not for production):")
    for path, what in rows:
        print(f"  {path!s:<{width}}  {what}")
    alice = q(str(creds.token_path("alice")))
    operator = q(str(creds.token_path("operator")))
    print("next:")
    print(f"  assay up --credentials {q(str(creds.root))}")
    print(
        "  # the operator registers each reviewer (alice, bob, carol; tenant acme), as themselves:"
    )
    print(
        f"  assay reviewer add alice --kind human --attested-by operator "
        f"--ca {q(str(creds.ca))} --token-file {operator}"
    )
    print(
        f"  grpcurl -cacert {q(str(creds.ca))} "
        f'-H "authorization: Bearer $(cat {alice})" '
        f"-d {q(GRPCURL_EXAMPLE_BODY)} localhost:50051 assay.v1.ResolverService/ResolveSemantic"
    )

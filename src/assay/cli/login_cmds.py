"""``assay login``, ``assay whoami`` and ``assay context``: signing in from the terminal and
naming where commands go, so no command repeats ``--target``, ``--ca``, ``--token-file`` or
``--reviewer`` (``signin`` keeps the identities and contexts)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay.cli import signin
from assay.cli.common import EXIT_OK, CliError, add_output_argument, emit_data, usage_error


def _shown(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _login(args: argparse.Namespace) -> int:
    name = args.name or signin.default_identity()
    issuer, client_id, secret_file = args.issuer, args.client_id, args.client_secret_file
    if not issuer or not client_id:
        try:
            known = signin.Identity.load(name)
        except signin.SignInError:
            raise usage_error("give --issuer and --client-id (the first sign-in)") from None
        issuer, client_id = issuer or known.issuer, client_id or known.client_id
        if secret_file is None and known.client_secret_file:
            secret_file = Path(known.client_secret_file)

    def show(url: str) -> None:
        sys.stderr.write(f"Sign in at this address (opened in your browser if it can):\n{url}\n")
        sys.stderr.flush()

    try:
        identity = signin.login(
            name, issuer, client_id, secret_file, show, not args.no_browser, args.wait
        )
    except signin.SignInError as error:
        raise CliError(str(error)) from None
    sys.stderr.write(f"Signed in as {identity.subject} (identity {identity.name!r}).\n")
    return _show(args, identity)


def _whoami(args: argparse.Namespace) -> int:
    name = args.name or signin.default_identity()
    try:
        identity = signin.fresh(signin.Identity.load(name))
    except signin.SignInError as error:
        raise CliError(str(error)) from None
    return _show(args, identity)


def _logout(args: argparse.Namespace) -> int:
    name = args.name or signin.default_identity()
    try:
        identity = signin.Identity.load(name)
        ending = signin.logout(identity)
    except signin.SignInError as error:
        raise CliError(str(error)) from None
    sys.stderr.write(f"Signed out {identity.subject} (identity {identity.name!r}).\n")
    data = {"identity": identity.name, "subject": identity.subject, "provider_sign_out": ending}

    def text() -> None:
        if ending:
            print(f"Your browser's sign-in at the provider ends here: {ending}")

    return emit_data(args, data, text)


def _show(args: argparse.Namespace, identity: signin.Identity) -> int:
    """Who the identity is and until when (never a token)."""
    data = {
        "identity": identity.name,
        "issuer": identity.issuer,
        "subject": identity.subject,
        "reviewer_id": identity.reviewer_id,
        "expires": _shown(identity.expires_at),
        "refreshable": bool(identity.refresh_token),
    }

    def text() -> None:
        for key, value in data.items():
            print(f"{key + ':':13} {value}")

    return emit_data(args, data, text)


def _context_add(args: argparse.Namespace) -> int:
    data = signin.load_contexts()
    entry: dict[str, str] = dict(data["contexts"].get(args.context, {}))
    for service in signin.SERVICES:
        value = getattr(args, service)
        if value:
            entry[service] = value
    if args.ca:
        entry["ca"] = str(Path(args.ca).resolve())
    if args.identity:
        entry["identity"] = args.identity
    data["contexts"][args.context] = entry
    if args.use or not data.get("current"):
        data["current"] = args.context
    signin.save_contexts(data)
    return EXIT_OK


def _context_use(args: argparse.Namespace) -> int:
    data = signin.load_contexts()
    if args.context not in data["contexts"]:
        raise CliError(f"no context {args.context!r} (assay context list)")
    data["current"] = args.context
    signin.save_contexts(data)
    return EXIT_OK


def _context_list(args: argparse.Namespace) -> int:
    data = signin.load_contexts()
    rows = [
        {"name": name, "current": name == data.get("current"), **entry}
        for name, entry in sorted(data["contexts"].items())
    ]

    def text() -> None:
        for row in rows:
            mark = "*" if row["current"] else " "
            rest = "  ".join(f"{k}={v}" for k, v in row.items() if k not in ("name", "current"))
            print(f"{mark} {row['name']}  {rest}")

    return emit_data(args, rows, text)


def register(subparsers: Any) -> None:
    login = subparsers.add_parser(
        "login",
        help="sign in with your identity provider (OpenID Connect, in the browser)",
        description="The authorization code flow with PKCE, answered on a loopback address; "
        "the tokens are kept owner-only in $XDG_CONFIG_HOME/assay and refreshed.",
    )
    login.add_argument("--issuer", help="the provider's issuer URL (remembered)")
    login.add_argument("--client-id", help="this client's id at the provider (remembered)")
    login.add_argument(
        "--client-secret-file", type=Path, help="a file holding the client secret, if it has one"
    )
    login.add_argument(
        "--name",
        help="the identity's name (default: the current context's, else the last signed in, "
        "else 'default')",
    )
    login.add_argument("--no-browser", action="store_true", help="only print the address to open")
    login.add_argument(
        "--wait", type=float, default=300.0, help="seconds to wait for the browser (default 300)"
    )
    add_output_argument(login)
    login.set_defaults(handler=_login)

    logout = subparsers.add_parser(
        "logout",
        help="sign out: revoke the refresh token where the provider can, delete the tokens",
    )
    logout.add_argument("--name", help="an identity (default: the current context's)")
    add_output_argument(logout)
    logout.set_defaults(handler=_logout)

    whoami = subparsers.add_parser("whoami", help="who you are signed in as, and until when")
    whoami.add_argument("--name", help="an identity (default: the current context's)")
    add_output_argument(whoami)
    whoami.set_defaults(handler=_whoami)

    context = subparsers.add_parser(
        "context", help="named targets, CA and identity, so commands need no such flags"
    )
    sub = context.add_subparsers(dest="context_command", metavar="COMMAND", required=True)
    add = sub.add_parser("add", help="add or change a context (the first one is used)")
    add.add_argument("context", help="its name")
    for service in signin.SERVICES:
        add.add_argument(f"--{service}", metavar="HOST:PORT", help=f"the {service} target")
    add.add_argument("--ca", help="the CA certificate the services' certificates chain to")
    add.add_argument("--identity", help="the identity `assay login --name` signed in")
    add.add_argument("--use", action="store_true", help="use it from now on")
    add.set_defaults(handler=_context_add)
    use = sub.add_parser("use", help="use a context from now on")
    use.add_argument("context")
    use.set_defaults(handler=_context_use)
    listing = sub.add_parser("list", help="the contexts, the one in use marked *")
    add_output_argument(listing)
    listing.set_defaults(handler=_context_list)

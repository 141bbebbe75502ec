"""What the console is told at start: where it listens, where the services are, how people
sign in. Validated once, so a console that could serve the dev sign-in beyond this machine
never starts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from assay.transport import is_loopback

DEFAULT_PORT = 8080
# The issuer a dev-mode session names: the person typed a name, nobody vouched for it.
DEV_MODE_ISSUER = "assay-dev-mode"


@dataclass(frozen=True)
class ConsoleSettings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    # The services (gRPC targets) and the CA their certificates chain to (None: plaintext,
    # which only loopback services in dev mode accept).
    resolver: str = "127.0.0.1:50051"
    planner: str = "127.0.0.1:50052"
    adjudication: str = "127.0.0.1:50053"
    ca: Path | None = None
    # With a CA: the name the services' certificates carry, checked instead of each
    # target's own (several replicas behind one DNS name; "" : the target's name).
    services_server_name: str = ""
    # HTTPS for the console itself (None: plain HTTP, loopback only).
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # OpenID Connect: the issuer (discovery at <issuer>/.well-known/openid-configuration), the
    # console's client id, and a file holding its client secret ("" for a public client).
    oidc_issuer: str = ""
    oidc_client_id: str = ""
    oidc_client_secret_file: Path | None = None
    # The address people reach the console at (the redirect URI is built from it); default:
    # http(s)://host:port.
    public_url: str = ""
    # Dev sign-in: a folder written by `assay dev-credentials`; its example principals' tokens
    # are offered on the sign-in page. Loopback only (``check``).
    dev_credentials: Path | None = None
    # Dev mode: the services authenticate nobody (``assay up`` without credentials), so a
    # person signs in by typing the name to act as and every call carries no token. Loopback
    # only (``check``); the pages say it is dev mode.
    dev_mode: bool = False
    # How long a signed-in session lasts at most (it ends sooner with its token).
    session_lifetime: timedelta = timedelta(hours=8)

    @property
    def https(self) -> bool:
        return self.tls_cert is not None

    @property
    def base_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        scheme = "https" if self.https else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    def check(self) -> None:
        """ValueError naming what may not be combined."""
        if self.dev_credentials is not None and not is_loopback(self.host):
            raise ValueError(
                "the dev sign-in (--dev-credentials) is served on loopback only; "
                f"{self.host} is not a loopback address"
            )
        if self.dev_mode and not is_loopback(self.host):
            raise ValueError(
                "the console's dev mode (sign in by typing a name, no credentials) is served "
                f"on loopback only; {self.host} is not a loopback address"
            )
        if self.dev_mode and self.dev_credentials is not None:
            raise ValueError("dev mode and --dev-credentials exclude each other")
        if not self.https and not is_loopback(self.host):
            raise ValueError(
                f"the console serves plain HTTP on loopback only: give --tls-cert and --tls-key "
                f"to listen on {self.host}"
            )
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("--tls-cert and --tls-key go together")
        if bool(self.oidc_issuer) != bool(self.oidc_client_id):
            raise ValueError("--oidc-issuer and --oidc-client-id go together")
        if not self.oidc_issuer and self.dev_credentials is None and not self.dev_mode:
            raise ValueError(
                "no way to sign in: give --oidc-issuer and --oidc-client-id, or (on loopback) "
                "--dev-credentials DIR"
            )

"""A real HTTP server on 127.0.0.1 for tests that need one (an OIDC provider's discovery
and revocation endpoints, a JWKS endpoint, a webhook receiver): each test writes only its
handler's answers; starting, quieting and stopping the server is here."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and answers JSON with ``send_json``."""

    def send_json(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


def loopback_server(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """A server for ``handler`` on a free port of 127.0.0.1, not yet serving."""
    return ThreadingHTTPServer(("127.0.0.1", 0), handler)


def base_url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


@contextlib.contextmanager
def serving(server: ThreadingHTTPServer) -> Iterator[ThreadingHTTPServer]:
    """``server`` answering on a thread of its own, shut down and closed on exit."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

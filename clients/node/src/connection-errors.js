// Connection failures said in words: a client and a server that disagree on
// TLS.
//
// A plaintext client calling a TLS port gets only "http/2 stream closed with
// error code CANCEL" from Node's HTTP/2 stack (the server hangs up on bytes
// that are not a TLS handshake), and a TLS client calling a plaintext port
// gets OpenSSL's "wrong version number". Neither says what to change. This
// interceptor turns both into UNAVAILABLE errors that name the target and the
// option to change, keeping the original error as `cause`. For the first, it
// checks its guess before saying it: it opens a TLS handshake to the target
// (nothing is sent over it, and the certificate is not judged) and only if the
// server answers as a TLS server is the error rewritten.

import { connect } from "node:tls";
import { isIP } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";

/** How long the TLS probe of a failed plaintext call may take. */
export const TLS_PROBE_TIMEOUT_MS = 2_000;

// OpenSSL's answer when the peer's first bytes are not a TLS record.
const NOT_TLS = "ERR_SSL_WRONG_VERSION_NUMBER";

/** The first error in `error`'s chain of causes that carries a `code` string. */
function systemCode(error) {
  for (let cause = error, depth = 0; cause && depth < 5; cause = cause.cause, depth += 1) {
    if (typeof cause.code === "string") return cause.code;
  }
  return "";
}

/**
 * Whether the server at `host:port` answers a TLS handshake: true once the
 * handshake completes or the server sends a TLS alert (a certificate it wants,
 * say), false when it answers with something else, hangs up, or is silent for
 * `timeoutMs`.
 */
export function speaksTls(host, port, timeoutMs = TLS_PROBE_TIMEOUT_MS) {
  const name = host.replace(/^\[|\]$/g, "");
  return new Promise((resolve) => {
    const socket = connect({
      host: name,
      port,
      servername: isIP(name) ? undefined : name,
      ALPNProtocols: ["h2"],
      // Only the protocol is in question here: no data is sent on this socket.
      rejectUnauthorized: false,
    });
    const settle = (answer) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(timeoutMs, () => settle(false));
    socket.once("secureConnect", () => settle(true));
    socket.once("error", (error) => {
      const code = typeof error.code === "string" ? error.code : "";
      settle(code !== NOT_TLS && (code.startsWith("ERR_SSL_") || code.startsWith("ERR_TLS_")));
    });
  });
}

function rewritten(message, original) {
  return new ConnectError(message, Code.Unavailable, original.metadata, undefined, original);
}

/**
 * An interceptor for a transport to `url` (secure: whether it speaks TLS) that
 * reports a TLS/plaintext mismatch as such.
 */
export function tlsMismatchInterceptor(url, secure) {
  const where = url.host;
  const port = Number(url.port || (secure ? 443 : 80));
  return (next) => async (request) => {
    try {
      return await next(request);
    } catch (error) {
      if (!(error instanceof ConnectError) || request.signal.aborted) throw error;
      if (secure && systemCode(error) === NOT_TLS) {
        throw rewritten(
          `the server at ${where} does not speak TLS (it is plaintext, as \`assay up\` serves ` +
            "without credentials), but this client asked for TLS (`ca`, `cert`, `tls` or an " +
            "https:// target): leave those out to call it, or serve it with --credentials",
          error,
        );
      }
      // A service's own refusal carries an ErrorInfo; a connection that failed carries nothing.
      const suspicious =
        (error.code === Code.Canceled || error.code === Code.Unavailable) &&
        error.details.length === 0;
      if (!secure && suspicious && (await speaksTls(url.hostname, port))) {
        throw rewritten(
          `the server at ${where} speaks TLS, but this client connects in plaintext: give ` +
            "`ca` (the CA its certificate chains to, e.g. DIR/ca.pem of `assay dev-credentials " +
            "DIR`), or `tls: true` to trust the system's roots",
          error,
        );
      }
      throw error;
    }
  };
}

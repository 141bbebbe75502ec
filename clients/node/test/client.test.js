// The client library on its own, without Assay servers: the default deadline
// and the bearer token reach the wire, credential options are checked before
// any connection, a TLS client against a plaintext server says so, and
// decodeError reads rich error details.

import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import {
  BadRequestSchema,
  Code,
  ConnectError,
  createResolverClient,
  createTransport,
  decodeError,
  DEFAULT_TIMEOUT_MS,
  ErrorInfoSchema,
  ErrorReason,
} from "../src/index.js";

describe("deadlines", () => {
  // An HTTP/2 server that accepts every call and never answers, and records
  // the grpc-timeout header each call arrived with.
  const seenTimeouts = [];
  const sessions = new Set();
  let server;
  let target;

  before(async () => {
    server = createServer();
    server.on("session", (session) => sessions.add(session));
    server.on("stream", (stream, headers) => {
      seenTimeouts.push(headers["grpc-timeout"]);
      stream.on("error", () => {});
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    target = `127.0.0.1:${server.address().port}`;
  });

  after(() => {
    for (const session of sessions) session.destroy();
    return new Promise((resolve) => server.close(resolve));
  });

  it("sends the default deadline and gives up with DEADLINE_EXCEEDED when it passes", async () => {
    const client = createResolverClient(target, { timeoutMs: 300 });
    const started = Date.now();
    await assert.rejects(client.getResolverPolicy({}), (error) => {
      assert.equal(decodeError(error).code, Code.DeadlineExceeded);
      return true;
    });
    assert.ok(Date.now() - started < 5_000, "the deadline bounded the call");
    assert.match(seenTimeouts.at(-1) ?? "", /^\d+m$/);
  });

  it("has a finite default even when the caller sets none", async () => {
    assert.ok(Number.isFinite(DEFAULT_TIMEOUT_MS) && DEFAULT_TIMEOUT_MS > 0);
    const defaulted = createResolverClient(target);
    const controller = new AbortController();
    const pending = defaulted.getResolverPolicy({}, { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    await assert.rejects(pending);
    const header = seenTimeouts.at(-1) ?? "";
    assert.equal(header, `${DEFAULT_TIMEOUT_MS}m`);
  });
});

describe("TLS against a plaintext server", () => {
  // A plaintext HTTP/2 server, as `assay up` serves without credentials.
  let server;
  let target;

  before(async () => {
    server = createServer();
    server.on("stream", (stream) => stream.on("error", () => {}));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    target = `127.0.0.1:${server.address().port}`;
  });

  after(() => new Promise((resolve) => server.close(resolve)));

  it("says the server does not speak TLS, naming the options to leave out", async () => {
    const client = createResolverClient(target, { tls: true, timeoutMs: 5_000 });
    await assert.rejects(client.getResolverPolicy({}), (error) => {
      const decoded = decodeError(error);
      assert.equal(decoded.code, Code.Unavailable);
      assert.equal(decoded.reason, "");
      assert.match(decoded.message, new RegExp(`server at ${target} does not speak TLS`));
      assert.match(decoded.message, /`ca`, `cert`, `tls` or an https:\/\/ target/);
      assert.match(String(error.cause?.message), /wrong version number/);
      return true;
    });
  });

  it("leaves a refused connection as it is: nothing listens, so nothing speaks TLS", async () => {
    const client = createResolverClient("127.0.0.1:1", { timeoutMs: 2_000 });
    await assert.rejects(client.getResolverPolicy({}), (error) => {
      assert.doesNotMatch(error.message, /TLS/);
      return true;
    });
  });
});

describe("decodeError", () => {
  it("reads the ErrorInfo reason and every BadRequest field violation", () => {
    const error = new ConnectError("bad claim", Code.InvalidArgument, undefined, [
      {
        desc: ErrorInfoSchema,
        value: create(ErrorInfoSchema, {
          reason: "ERROR_REASON_UNKNOWN_SOURCE",
          domain: "assay.v1",
          metadata: { request_id: "r-1" },
        }),
      },
      {
        desc: BadRequestSchema,
        value: create(BadRequestSchema, {
          fieldViolations: [
            { field: "evidence.claims[0].source", description: "unknown" },
            { field: "evidence.claims[1].confidence", description: "not in [0, 1]" },
          ],
        }),
      },
    ]);
    const decoded = decodeError(error);
    assert.equal(decoded.code, Code.InvalidArgument);
    assert.equal(decoded.codeName, "InvalidArgument");
    assert.equal(decoded.message, "bad claim");
    assert.equal(decoded.reasonValue, ErrorReason.UNKNOWN_SOURCE);
    assert.deepEqual(decoded.metadata, { request_id: "r-1" });
    assert.deepEqual(
      decoded.fieldViolations.map((violation) => violation.field),
      ["evidence.claims[0].source", "evidence.claims[1].confidence"],
    );
  });

  it("maps a reason this client does not know to UNSPECIFIED, keeping the string", () => {
    const error = new ConnectError("new", Code.FailedPrecondition, undefined, [
      { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "ERROR_REASON_FROM_THE_FUTURE" }) },
    ]);
    const decoded = decodeError(error);
    assert.equal(decoded.reason, "ERROR_REASON_FROM_THE_FUTURE");
    assert.equal(decoded.reasonValue, ErrorReason.UNSPECIFIED);
    assert.deepEqual(decoded.fieldViolations, []);
  });

  it("rethrows anything that is not a call error", () => {
    const bug = new TypeError("not an RPC failure");
    assert.throws(() => decodeError(bug), bug);
  });
});

describe("credentials", () => {
  // An HTTP/2 server that answers every call at once with NOT_FOUND (a
  // trailers-only response) and records the authorization header it carried.
  const seenAuthorization = [];
  const sessions = new Set();
  let server;
  let target;
  let scratch;

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), "assay-node-credentials-"));
    server = createServer();
    server.on("session", (session) => sessions.add(session));
    server.on("stream", (stream, headers) => {
      seenAuthorization.push(headers.authorization);
      stream.respond(
        { ":status": 200, "content-type": "application/grpc", "grpc-status": "5" },
        { endStream: true },
      );
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    target = `127.0.0.1:${server.address().port}`;
  });

  after(() => {
    rmSync(scratch, { recursive: true, force: true });
    for (const session of sessions) session.destroy();
    return new Promise((resolve) => server.close(resolve));
  });

  /** The authorization header of one call made with `client` (the call itself fails). */
  async function authorizationOf(client) {
    await assert.rejects(client.getResolverPolicy({}), (error) => {
      assert.equal(decodeError(error).code, Code.NotFound);
      return true;
    });
    return seenAuthorization.at(-1);
  }

  it("sends `token` as `authorization: Bearer` on every call", async () => {
    const client = createResolverClient(target, { token: "  header.payload.signature\n" });
    assert.equal(await authorizationOf(client), "Bearer header.payload.signature");
    assert.equal(await authorizationOf(client), "Bearer header.payload.signature");
  });

  it("sends no authorization header without a token", async () => {
    assert.equal(await authorizationOf(createResolverClient(target)), undefined);
  });

  it("reads `tokenFile` and picks up a rotated token, keeping the last good one", async () => {
    const path = join(scratch, "rotating.jwt");
    writeFileSync(path, "first.token.value\n");
    const client = createResolverClient(target, { tokenFile: path });
    assert.equal(await authorizationOf(client), "Bearer first.token.value");
    writeFileSync(path, "second.token.value-rotated\n");
    assert.equal(await authorizationOf(client), "Bearer second.token.value-rotated");
    writeFileSync(path, "");  // caught half-written
    assert.equal(await authorizationOf(client), "Bearer second.token.value-rotated");
  });

  it("refuses a token in plaintext to a host other than this machine", () => {
    for (const remote of [
      "10.1.2.3:50051",
      "assay.example.com:443",
      "http://192.168.0.7:50051",
      "[2001:db8::1]:50051",
      "127.example.com:50051",
    ]) {
      assert.throws(
        () => createTransport(remote, { token: "t" }),
        /refusing to send a bearer token in plaintext to /,
        remote,
      );
      assert.throws(() => createTransport(remote, { tokenFile: "/nonexistent" }), /plaintext/);
      if (!remote.startsWith("http://")) {
        // Over TLS the same token may go anywhere.
        createTransport(remote, { token: "t", tls: true });
        createTransport(remote, { token: "t", ca: "-----BEGIN CERTIFICATE-----\n" });
      }
    }
    createTransport("https://192.168.0.7:50051", { token: "t" });
    for (const local of ["localhost:1", "127.0.0.1:1", "127.3.4.5:1", "[::1]:1", "http://localhost:1"]) {
      createTransport(local, { token: "t" });
    }
  });

  it("refuses incomplete or conflicting credential options before connecting", () => {
    const pem = "-----BEGIN CERTIFICATE-----\n";
    const cases = [
      [{ cert: pem }, /needs its key/],
      [{ key: pem }, /needs its key/],
      [{ token: "a", tokenFile: "b" }, /not both/],
      [{ token: "" }, /does not hold one bearer token/],
      [{ token: "two words" }, /does not hold one bearer token/],
      [{ tokenFile: join(scratch, "missing.jwt") }, /cannot read token file .*missing\.jwt: ENOENT/],
      [{ ca: join(scratch, "missing-ca.pem") }, /cannot read CA .*missing-ca\.pem/],
      [{ tls: false, ca: pem }, /plaintext target/],
    ];
    for (const [options, expected] of cases) {
      assert.throws(() => createTransport(target, options), expected, JSON.stringify(options));
    }
    assert.throws(() => createTransport(`http://${target}`, { ca: pem }), /plaintext target/);
    assert.throws(() => createTransport(`https://${target}`, { tls: false }), /plaintext target/);
    const empty = join(scratch, "empty.jwt");
    writeFileSync(empty, "\n");
    assert.throws(() => createTransport(target, { tokenFile: empty }), /does not hold one bearer token/);
  });
});

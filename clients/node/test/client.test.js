// The client library on its own, without Assay servers: the default deadline
// reaches the wire, and decodeError reads rich error details.

import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http2";
import { after, before, describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import {
  BadRequestSchema,
  Code,
  ConnectError,
  createResolverClient,
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

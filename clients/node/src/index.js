// Assay from Node: typed clients for the three services (and approvals, which the
// adjudication process serves) and one error decoder.
//
// The messages and service descriptors are generated from proto/assay/v1 by
// `npm run generate` (protoc-gen-es, into src/gen). Calls go over HTTP/2 gRPC
// (Connect-ES's gRPC transport), so they reach the Python grpc.aio servers
// exactly as any gRPC client would. Every call has a deadline: the transport's
// default applies unless the caller passes `{ timeoutMs }` for one call.
//
// A secured deployment (TLS, bearer tokens, mutual TLS) takes the credential
// options of createTransport: `ca`, `cert`/`key`, `token` or `tokenFile`.

import { readFileSync, statSync } from "node:fs";
import { isIP } from "node:net";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AdjudicationService } from "./gen/assay/v1/adjudication_service_pb.js";
import { ApprovalService } from "./gen/assay/v1/approval_service_pb.js";
import { ErrorReason, ErrorReasonSchema } from "./gen/assay/v1/errors_pb.js";
import { PlannerService } from "./gen/assay/v1/planner_service_pb.js";
import { ResolverService } from "./gen/assay/v1/resolver_service_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import { tlsMismatchInterceptor } from "./connection-errors.js";

export { Code, ConnectError } from "@connectrpc/connect";
export { create, fromJson, toJson } from "@bufbuild/protobuf";
export * from "./gen/assay/v1/adjudication_service_pb.js";
export * from "./gen/assay/v1/approval_service_pb.js";
export * from "./gen/assay/v1/claim_pb.js";
export * from "./gen/assay/v1/errors_pb.js";
export * from "./gen/assay/v1/gold_pb.js";
export * from "./gen/assay/v1/plan_pb.js";
export * from "./gen/assay/v1/planner_service_pb.js";
export * from "./gen/assay/v1/resolution_pb.js";
export * from "./gen/assay/v1/resolver_service_pb.js";
export { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";

/** The deadline of a call that does not set its own, in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** The domain of every ErrorInfo an Assay service sends. */
export const ERROR_DOMAIN = "assay.v1";

/**
 * Where the clients connect when not told: ASSAY_RESOLVER_TARGET,
 * ASSAY_PLANNER_TARGET and ASSAY_ADJUDICATION_TARGET when set ("host:port"),
 * else where `assay up` listens by default.
 */
export const DEFAULT_TARGETS = Object.freeze({
  resolver: process.env.ASSAY_RESOLVER_TARGET || "127.0.0.1:50051",
  planner: process.env.ASSAY_PLANNER_TARGET || "127.0.0.1:50052",
  adjudication: process.env.ASSAY_ADJUDICATION_TARGET || "127.0.0.1:50053",
});

/** Host names that reach this machine only (the same rule as Python's assay.transport). */
const LOOPBACK_NAMES = new Set(["localhost", "ip6-localhost", "ip6-loopback"]);

/** Whether `host` (a name or an address, IPv6 possibly in brackets) is this machine only. */
function isLoopback(host) {
  const name = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (LOOPBACK_NAMES.has(name)) return true;
  if (isIP(name) === 4) return name.startsWith("127.");
  if (isIP(name) === 6) return name === "::1" || name === "0:0:0:0:0:0:0:1";
  return false;
}

/**
 * PEM bytes from a Buffer, PEM text, or the path of a PEM file. The error
 * names the file, never its contents (a key is a secret).
 */
function pemBytes(value, what) {
  if (value instanceof Uint8Array) return Buffer.from(value);
  if (typeof value !== "string" || value === "") {
    throw new TypeError(`${what} must be a PEM file path, PEM text or a Buffer`);
  }
  if (value.includes("-----BEGIN ")) return Buffer.from(value, "utf8");
  try {
    return readFileSync(value);
  } catch (error) {
    throw new Error(`cannot read ${what} ${value}: ${error.code ?? error.message}`);
  }
}

/** A token as it may go in a header: one non-empty run of non-space characters. */
function checkedToken(token, where) {
  const trimmed = typeof token === "string" ? token.trim() : "";
  if (trimmed === "" || /\s/.test(trimmed)) {
    throw new Error(`${where} does not hold one bearer token`);
  }
  return trimmed;
}

/**
 * A bearer token kept in a file, read when the client is made (so a missing
 * file fails at once) and again whenever the file changes on disk, so a
 * rotated token is picked up without a restart. A file caught half-written
 * keeps the token that was good.
 */
function tokenFileSource(path) {
  const stamp = () => {
    try {
      const stat = statSync(path, { bigint: true });
      return `${stat.ino}:${stat.size}:${stat.mtimeNs}`;
    } catch {
      return "";
    }
  };
  const read = () => {
    let text;
    try {
      text = readFileSync(path, "ascii");
    } catch (error) {
      throw new Error(`cannot read token file ${path}: ${error.code ?? error.message}`);
    }
    return checkedToken(text, `token file ${path}`);
  };
  let seen = stamp();
  let token = read();
  return () => {
    const now = stamp();
    if (now !== seen && now !== "") {
      try {
        token = read();
        seen = now;
      } catch {
        // Keep the last good token; the next call looks again.
      }
    }
    return token;
  };
}

/** An interceptor that sends `authorization: Bearer <token>` with every call. */
function bearerInterceptor(currentToken) {
  return (next) => async (request) => {
    request.header.set("authorization", `Bearer ${currentToken()}`);
    return next(request);
  };
}

/**
 * A gRPC transport to `target` ("host:port" like grpcurl's, or a full
 * "http://host:port" / "https://host:port" URL).
 *
 * Without credential options the transport is plaintext HTTP/2, which is what
 * `assay up` serves in dev mode. With any of them it is TLS:
 * - `ca`: the CA to trust (PEM path, PEM text or Buffer); the system roots
 *   when left out and `tls: true` (or an https:// target) is given instead;
 * - `cert` and `key`: a client certificate for mutual TLS (both or neither);
 * - `token` or `tokenFile`: a bearer token sent as `authorization: Bearer …`
 *   on every call (a token file is re-read when it changes).
 * A token is never sent in plaintext to a host other than this machine: that
 * throws here, before any connection is made. A call that fails because client
 * and server disagree on TLS says so (UNAVAILABLE, naming the option to change).
 */
export function createTransport(
  target,
  { timeoutMs = DEFAULT_TIMEOUT_MS, tls, ca, cert, key, token, tokenFile } = {},
) {
  if ((cert === undefined) !== (key === undefined)) {
    throw new Error("a client certificate needs its key, and a key its certificate");
  }
  if (token !== undefined && tokenFile !== undefined) {
    throw new Error("give `token` or `tokenFile`, not both");
  }
  const scheme = /^(https?):\/\//.exec(target)?.[1];
  const secure = tls === true || ca !== undefined || cert !== undefined || scheme === "https";
  if ((scheme === "http" || tls === false) && secure) {
    throw new Error(`TLS (ca, cert, key, tls or https://) asked of the plaintext target ${target}`);
  }
  const baseUrl = scheme ? target : `${secure ? "https" : "http"}://${target}`;
  const url = new URL(baseUrl);
  const host = url.hostname;

  // Outermost: a TLS/plaintext mismatch is reported as such, not as a cancelled stream.
  const interceptors = [tlsMismatchInterceptor(url, secure)];
  if (token !== undefined || tokenFile !== undefined) {
    if (!secure && !isLoopback(host)) {
      throw new Error(
        `refusing to send a bearer token in plaintext to ${host}: give \`ca\` ` +
          "(or `tls: true` to trust the system roots)",
      );
    }
    if (tokenFile !== undefined) {
      interceptors.push(bearerInterceptor(tokenFileSource(tokenFile)));
    } else {
      const fixed = checkedToken(token, "`token`");
      interceptors.push(bearerInterceptor(() => fixed));
    }
  }
  const nodeOptions = {};
  if (ca !== undefined) nodeOptions.ca = pemBytes(ca, "CA");
  if (cert !== undefined) {
    nodeOptions.cert = pemBytes(cert, "client certificate");
    nodeOptions.key = pemBytes(key, "client key");
  }
  return createGrpcTransport({ baseUrl, defaultTimeoutMs: timeoutMs, interceptors, nodeOptions });
}

/** A ResolverService client (ResolveSemantic, ResolveEvidence, ...). */
export function createResolverClient(target = DEFAULT_TARGETS.resolver, options = {}) {
  return createClient(ResolverService, createTransport(target, options));
}

/** A PlannerService client (PlanEvidence, ListProbes). */
export function createPlannerClient(target = DEFAULT_TARGETS.planner, options = {}) {
  return createClient(PlannerService, createTransport(target, options));
}

/** An AdjudicationService client (reviewers, cases, reviews, gold labels, export). */
export function createAdjudicationClient(target = DEFAULT_TARGETS.adjudication, options = {}) {
  return createClient(AdjudicationService, createTransport(target, options));
}

/**
 * An ApprovalService client (RequestApproval, DecideApproval, ConsumeApproval,
 * WatchApproval, ...). The adjudication process serves it, on its port, so the
 * default target is the adjudication service's. Approvals need an authenticated
 * caller: give `ca` and `token`/`tokenFile` (a dev-mode server refuses every call
 * with FAILED_PRECONDITION, ERROR_REASON_AUTHENTICATION_REQUIRED).
 */
export function createApprovalClient(target = DEFAULT_TARGETS.adjudication, options = {}) {
  return createClient(ApprovalService, createTransport(target, options));
}

/**
 * All the clients at once (approvals on the adjudication target); any target
 * left out is the `assay up` default.
 * @param {{resolver?: string, planner?: string, adjudication?: string}} targets
 */
export function connectAssay(targets = {}, options = {}) {
  const all = { ...DEFAULT_TARGETS, ...targets };
  return {
    resolver: createResolverClient(all.resolver, options),
    planner: createPlannerClient(all.planner, options),
    adjudication: createAdjudicationClient(all.adjudication, options),
    approval: createApprovalClient(all.adjudication, options),
  };
}

/**
 * What an Assay error says, read from the rich status (grpc-status-details-bin):
 * the gRPC code, the ErrorInfo reason (as the string sent and as an
 * ErrorReason number a caller can switch on) and every BadRequest field
 * violation. Anything that is not a ConnectError is rethrown: it is a bug in
 * the caller, not an answer from a service.
 */
export function decodeError(error) {
  if (!(error instanceof ConnectError)) {
    throw error;
  }
  const [info] = error.findDetails(ErrorInfoSchema);
  const reason = info?.reason ?? "";
  const fieldViolations = error
    .findDetails(BadRequestSchema)
    .flatMap((bad) => bad.fieldViolations)
    .map((violation) => ({ field: violation.field, description: violation.description }));
  return {
    code: error.code,
    codeName: Code[error.code],
    message: error.rawMessage,
    reason,
    reasonValue: ErrorReasonSchema.values.find((value) => value.name === reason)?.number
      ?? ErrorReason.UNSPECIFIED,
    domain: info?.domain ?? "",
    metadata: { ...(info?.metadata ?? {}) },
    fieldViolations,
  };
}

// Assay from Node: typed clients for the three services and one error decoder.
//
// The messages and service descriptors are generated from proto/assay/v1 by
// `npm run generate` (protoc-gen-es, into src/gen). Calls go over HTTP/2 gRPC
// (Connect-ES's gRPC transport), so they reach the Python grpc.aio servers
// exactly as any gRPC client would. Every call has a deadline: the transport's
// default applies unless the caller passes `{ timeoutMs }` for one call.

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AdjudicationService } from "./gen/assay/v1/adjudication_service_pb.js";
import { ErrorReason, ErrorReasonSchema } from "./gen/assay/v1/errors_pb.js";
import { PlannerService } from "./gen/assay/v1/planner_service_pb.js";
import { ResolverService } from "./gen/assay/v1/resolver_service_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";

export { Code, ConnectError } from "@connectrpc/connect";
export { create, fromJson, toJson } from "@bufbuild/protobuf";
export * from "./gen/assay/v1/adjudication_service_pb.js";
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

/**
 * A gRPC transport to `target` ("host:port" like grpcurl's, or a full
 * "http://host:port" URL). Plaintext HTTP/2: the services serve no TLS.
 */
export function createTransport(target, { timeoutMs = DEFAULT_TIMEOUT_MS } = {}) {
  const baseUrl = /^https?:\/\//.test(target) ? target : `http://${target}`;
  return createGrpcTransport({ baseUrl, defaultTimeoutMs: timeoutMs });
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
 * All three clients at once; any target left out is the `assay up` default.
 * @param {{resolver?: string, planner?: string, adjudication?: string}} targets
 */
export function connectAssay(targets = {}, options = {}) {
  const all = { ...DEFAULT_TARGETS, ...targets };
  return {
    resolver: createResolverClient(all.resolver, options),
    planner: createPlannerClient(all.planner, options),
    adjudication: createAdjudicationClient(all.adjudication, options),
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

// Types for src/index.js (hand-written; the generated src/gen/**/*.d.ts carry the messages).

import type { Client, Code, ConnectError } from "@connectrpc/connect";
import type { Transport } from "@connectrpc/connect";
import type { AdjudicationService } from "./gen/assay/v1/adjudication_service_pb.js";
import type { ApprovalService } from "./gen/assay/v1/approval_service_pb.js";
import type { ErrorReason } from "./gen/assay/v1/errors_pb.js";
import type { PlannerService } from "./gen/assay/v1/planner_service_pb.js";
import type { ResolverService } from "./gen/assay/v1/resolver_service_pb.js";

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

/** PEM data: the path of a PEM file, PEM text ("-----BEGIN ..."), or its bytes (a Buffer). */
export type Pem = string | Uint8Array;

/**
 * Options shared by every client factory. Any of `tls`, `ca`, `cert`, `key`
 * makes the connection TLS; `token`/`tokenFile` add a bearer token to every
 * call, and are refused (the factory throws) over plaintext to a host other
 * than this machine.
 */
export interface ClientOptions {
  /** Deadline of a call that sets none itself (default DEFAULT_TIMEOUT_MS). */
  timeoutMs?: number;
  /**
   * TLS on (true, trusting the system roots unless `ca` is given) or off (false,
   * and then no `ca`/`cert`/`key`). Default: on when any of them is given or
   * the target is an https:// URL.
   */
  tls?: boolean;
  /** The CA that signed the server's certificate (e.g. `DIR/ca.pem` of `assay dev-credentials`). */
  ca?: Pem;
  /** A client certificate for mutual TLS; needs `key`. */
  cert?: Pem;
  /** The client certificate's private key; needs `cert`. */
  key?: Pem;
  /** A bearer token (a JWT), sent as `authorization: Bearer <token>`. Not with `tokenFile`. */
  token?: string;
  /** A file holding the bearer token, re-read when it changes (e.g. `DIR/tokens/alice.jwt`). */
  tokenFile?: string;
}

export declare const DEFAULT_TIMEOUT_MS: number;
export declare const ERROR_DOMAIN: "assay.v1";
export declare const DEFAULT_TARGETS: Readonly<{
  resolver: string;
  planner: string;
  adjudication: string;
}>;

export declare function createTransport(target: string, options?: ClientOptions): Transport;
export declare function createResolverClient(
  target?: string,
  options?: ClientOptions,
): Client<typeof ResolverService>;
export declare function createPlannerClient(
  target?: string,
  options?: ClientOptions,
): Client<typeof PlannerService>;
export declare function createAdjudicationClient(
  target?: string,
  options?: ClientOptions,
): Client<typeof AdjudicationService>;
/** An ApprovalService client, on the adjudication service's target by default. */
export declare function createApprovalClient(
  target?: string,
  options?: ClientOptions,
): Client<typeof ApprovalService>;
export declare function connectAssay(
  targets?: { resolver?: string; planner?: string; adjudication?: string },
  options?: ClientOptions,
): {
  resolver: Client<typeof ResolverService>;
  planner: Client<typeof PlannerService>;
  adjudication: Client<typeof AdjudicationService>;
  approval: Client<typeof ApprovalService>;
};

/** One BadRequest field violation. */
export interface FieldViolation {
  field: string;
  description: string;
}

/** What decodeError reads out of a failed call. */
export interface DecodedError {
  code: Code;
  codeName: string;
  message: string;
  /** The ErrorInfo reason as sent, e.g. "ERROR_REASON_UNKNOWN_SOURCE". */
  reason: string;
  /** The same reason as an ErrorReason value (UNSPECIFIED if unknown to this client). */
  reasonValue: ErrorReason;
  domain: string;
  metadata: Record<string, string>;
  fieldViolations: FieldViolation[];
}

/** Decodes a ConnectError; rethrows anything else. */
export declare function decodeError(error: unknown): DecodedError;

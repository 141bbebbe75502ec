// The Node client against a secured deployment: TLS trusting the folder's CA,
// bearer tokens of the example principals, and mutual TLS. The services run
// with `--credentials DIR` (a folder `assay dev-credentials DIR` wrote);
// tests/external/test_node_secure.py starts them and sets
//   ASSAY_SECURE_CREDENTIALS        the folder (ca.pem, tokens/NAME.jwt)
//   ASSAY_SECURE_RESOLVER_TARGET, ASSAY_SECURE_PLANNER_TARGET,
//   ASSAY_SECURE_ADJUDICATION_TARGET (default: the `assay up` ports)
//   ASSAY_MTLS_RESOLVER_TARGET      a resolver also started with --tls-client-ca DIR/ca.pem
//   ASSAY_MTLS_CLIENT_CERT, ASSAY_MTLS_CLIENT_KEY  a client certificate of that CA whose CN
//                                  the resolver's policy grants the reader role (issuer x509)
// By hand: `assay dev-credentials DIR && assay up --credentials DIR`, then
// `ASSAY_SECURE_CREDENTIALS=DIR node --test test/secure.test.js`. Without
// ASSAY_SECURE_CREDENTIALS these suites are skipped (and `npm test` runs the rest).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  Code,
  createAdjudicationClient,
  createPlannerClient,
  createResolverClient,
  decodeError,
  ErrorReason,
  fromJson,
  PlanEvidenceRequestSchema,
  PlanOutcome,
  ResolutionStatus,
  ResolveSemanticRequestSchema,
} from "../src/index.js";

const env = process.env;
const CREDENTIALS = env.ASSAY_SECURE_CREDENTIALS ?? "";
const TARGETS = {
  resolver: env.ASSAY_SECURE_RESOLVER_TARGET || "127.0.0.1:50051",
  planner: env.ASSAY_SECURE_PLANNER_TARGET || "127.0.0.1:50052",
  adjudication: env.ASSAY_SECURE_ADJUDICATION_TARGET || "127.0.0.1:50053",
};
const MTLS_TARGET = env.ASSAY_MTLS_RESOLVER_TARGET ?? "";
const EXAMPLES = new URL("../../../examples/", import.meta.url);

const CA = join(CREDENTIALS, "ca.pem");
const tokenFile = (name) => join(CREDENTIALS, "tokens", `${name}.jwt`);
const token = (name) => readFileSync(tokenFile(name), "ascii").trim();

function example(path) {
  return JSON.parse(readFileSync(new URL(path, EXAMPLES), "utf8"));
}

// How a connection the server never answered fails: no TLS session (an
// untrusted certificate, a missing client certificate) or no HTTP/2 session
// (plaintext to a TLS port). Connect-ES reports these as one of these codes.
const CONNECTION_FAILURES = [Code.Unavailable, Code.Internal, Code.Canceled, Code.Unknown];

/** Asserts that `error` is a connection failure, not an answer from a service. */
function assertConnectionFailure(error) {
  assert.ok(CONNECTION_FAILURES.includes(error.code), JSON.stringify(error));
  assert.equal(error.reason, "", "no service answered, so there is no ErrorInfo");
}

/** Runs `call`, which must fail, and returns the decoded error. */
async function failure(call) {
  try {
    await call();
  } catch (error) {
    return decodeError(error);
  }
  assert.fail("the call succeeded but was expected to fail");
}

const resolveRequest = () =>
  fromJson(ResolveSemanticRequestSchema, {
    evidence: example("evidence/safety-conflict.json"),
    subject: "api:payments.create",
    predicate: "idempotency.mode",
  });

const skipSecure = CREDENTIALS ? false : "set ASSAY_SECURE_CREDENTIALS to a served credentials folder";

describe("Secured deployment: TLS and bearer tokens", { skip: skipSecure }, () => {
  it("resolves over TLS with a reader's token (alice)", async () => {
    const resolver = createResolverClient(TARGETS.resolver, { ca: CA, tokenFile: tokenFile("alice") });
    const { resolution } = await resolver.resolveSemantic(resolveRequest());
    assert.equal(resolution.status, ResolutionStatus.CONFLICTED);
    assert.equal(resolution.requiresReview, true);
  });

  it("takes the token as a string and the CA as PEM bytes", async () => {
    const resolver = createResolverClient(TARGETS.resolver, {
      ca: readFileSync(CA),
      token: token("alice"),
    });
    const policy = await resolver.getResolverPolicy({});
    assert.equal(policy.conflictMargin, 0.2);
    assert.ok(policy.safetySensitivePredicates.includes("idempotency.mode"));
  });

  it("answers a call without a token with UNAUTHENTICATED, CREDENTIALS_MISSING", async () => {
    const resolver = createResolverClient(TARGETS.resolver, { ca: CA });
    const error = await failure(() => resolver.getResolverPolicy({}));
    assert.equal(error.code, Code.Unauthenticated, JSON.stringify(error));
    assert.equal(error.domain, "assay.v1");
    assert.equal(error.reason, "ERROR_REASON_CREDENTIALS_MISSING");
    assert.equal(error.reasonValue, ErrorReason.CREDENTIALS_MISSING);
  });

  it("answers a token that is not a valid JWT with UNAUTHENTICATED, CREDENTIALS_INVALID", async () => {
    const resolver = createResolverClient(TARGETS.resolver, { ca: CA, token: "not.a.jwt" });
    const error = await failure(() => resolver.getResolverPolicy({}));
    assert.equal(error.code, Code.Unauthenticated);
    assert.equal(error.reasonValue, ErrorReason.CREDENTIALS_INVALID);
  });

  it("answers a role the RPC does not allow with PERMISSION_DENIED, ROLE_REQUIRED", async () => {
    // alice is a reviewer and reader; ListReviewers needs operator.
    const adjudication = createAdjudicationClient(TARGETS.adjudication, {
      ca: CA,
      tokenFile: tokenFile("alice"),
    });
    const error = await failure(() => adjudication.listReviewers({}));
    assert.equal(error.code, Code.PermissionDenied, JSON.stringify(error));
    assert.equal(error.reason, "ERROR_REASON_ROLE_REQUIRED");
    assert.equal(error.reasonValue, ErrorReason.ROLE_REQUIRED);
    assert.match(error.metadata.required_roles ?? "", /operator/i);
  });

  it("lets the operator list reviewers", async () => {
    const adjudication = createAdjudicationClient(TARGETS.adjudication, {
      ca: CA,
      tokenFile: tokenFile("operator"),
    });
    const { reviewers } = await adjudication.listReviewers({});
    assert.ok(Array.isArray(reviewers));
  });

  it("plans through the planner, which calls the resolver with its own credential", async () => {
    const planner = createPlannerClient(TARGETS.planner, { ca: CA, tokenFile: tokenFile("alice") });
    const request = fromJson(PlanEvidenceRequestSchema, example("plan/safety-conflict-read-only.json"));
    const { plan } = await planner.planEvidence(request);
    assert.equal(plan.outcome, PlanOutcome.ACQUISITION_RECOMMENDED);
    assert.equal(plan.resolutionStatus, ResolutionStatus.CONFLICTED);
  });

  it("does not trust the server without its CA (the system roots do not know it)", async () => {
    const resolver = createResolverClient(TARGETS.resolver, {
      tls: true,
      tokenFile: tokenFile("alice"),
      timeoutMs: 5_000,
    });
    const error = await failure(() => resolver.getResolverPolicy({}));
    assertConnectionFailure(error);
    assert.match(error.message, /certificate/i);
  });

  it("cannot call the TLS server in plaintext, and says the server wants TLS", async () => {
    const resolver = createResolverClient(`http://${TARGETS.resolver}`, { timeoutMs: 5_000 });
    const error = await failure(() => resolver.getResolverPolicy({}));
    assertConnectionFailure(error);
    assert.equal(error.code, Code.Unavailable);
    assert.match(error.message, /speaks TLS, but this client connects in plaintext: give `ca`/);
  });
});

const skipMtls = CREDENTIALS && MTLS_TARGET ? false : "set ASSAY_MTLS_RESOLVER_TARGET (and ASSAY_SECURE_CREDENTIALS)";

describe("Secured deployment: mutual TLS", { skip: skipMtls }, () => {
  const clientCertificate = { cert: env.ASSAY_MTLS_CLIENT_CERT, key: env.ASSAY_MTLS_CLIENT_KEY };

  it("resolves with a client certificate and no token (the certificate's CN is the caller)", async () => {
    const resolver = createResolverClient(MTLS_TARGET, { ca: CA, ...clientCertificate });
    const { resolution } = await resolver.resolveSemantic(resolveRequest());
    assert.equal(resolution.status, ResolutionStatus.CONFLICTED);
  });

  it("is refused at the handshake without a client certificate", async () => {
    const resolver = createResolverClient(MTLS_TARGET, {
      ca: CA,
      tokenFile: tokenFile("alice"),
      timeoutMs: 5_000,
    });
    assertConnectionFailure(await failure(() => resolver.getResolverPolicy({})));
  });
});

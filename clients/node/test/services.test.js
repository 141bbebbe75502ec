// The Node client against real Assay servers. tests/external/test_node_client.py
// starts the three services on free ports and passes their addresses in
//   ASSAY_RESOLVER_TARGET, ASSAY_PLANNER_TARGET, ASSAY_ADJUDICATION_TARGET.
// By hand: `assay up` and `npm test` (unset variables mean the `assay up` ports).
//
// The same suite runs against a secured deployment when ASSAY_SECURE_CREDENTIALS
// names the folder it serves (`assay dev-credentials DIR`, then `assay up
// --credentials DIR --allow-fixture-reviewers`; tests/external/test_node_secure.py
// does this): every call then trusts DIR/ca.pem and carries the token of the
// example person whose role the RPC needs (alice reads and reviews, bob
// reviews, the operator registers, enqueues, resolves, freezes and exports),
// and the gold label comes from alice and bob, humans, in their tenant `acme`.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  Availability,
  CaseState,
  Code,
  createAdjudicationClient,
  createPlannerClient,
  createResolverClient,
  decodeError,
  DEFAULT_TARGETS,
  ErrorReason,
  fromJson,
  GapKind,
  LabelingProvenance,
  PlanEvidenceRequestSchema,
  PlanOutcome,
  ProbeKind,
  ResolutionBasis,
  ResolutionStatus,
  ResolveSemanticRequestSchema,
  ReviewerKind,
  ReviewOutcome,
} from "../src/index.js";

const EXAMPLES = new URL("../../../examples/", import.meta.url);
const SECURE = process.env.ASSAY_SECURE_CREDENTIALS ?? "";

/** The credential options of example person `name` (none in dev mode, where all may do all). */
function as(name) {
  if (!SECURE) return {};
  return { ca: join(SECURE, "ca.pem"), tokenFile: join(SECURE, "tokens", `${name}.jwt`) };
}

/** Runs `call`, ignoring only ALREADY_EXISTS (a person registered by an earlier run). */
async function unlessExists(call) {
  try {
    await call();
  } catch (error) {
    if (decodeError(error).code !== Code.AlreadyExists) throw error;
  }
}

function example(path) {
  return JSON.parse(readFileSync(new URL(path, EXAMPLES), "utf8"));
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

// Unique per run, so the suite can be re-run against one long-lived `assay up`.
const RUN = `${process.pid}-${Date.now().toString(36)}`;

describe("ResolverService", () => {
  const resolver = createResolverClient(DEFAULT_TARGETS.resolver, as("alice"));

  it("resolves the example's safety conflict as CONFLICTED, requiring review", async () => {
    // The request is built from canonical proto JSON, as another language would send it.
    const request = fromJson(ResolveSemanticRequestSchema, {
      evidence: example("evidence/safety-conflict.json"),
      subject: "api:payments.create",
      predicate: "idempotency.mode",
    });
    const { resolution } = await resolver.resolveSemantic(request);
    assert.equal(resolution.status, ResolutionStatus.CONFLICTED);
    assert.equal(resolution.requiresReview, true);
    assert.equal(resolution.safetySensitive, true);
    const values = resolution.values.map((support) => support.value.kind.value).sort();
    assert.deepEqual(values, ["idempotency-key", "none"]);
  });

  it("answers a claim with an unknown source with INVALID_ARGUMENT naming the field", async () => {
    const error = await failure(() =>
      resolver.resolveSemantic({
        subject: "api:x",
        predicate: "retries.mode",
        evidence: {
          claims: [
            {
              subject: "api:x",
              predicate: "retries.mode",
              value: { kind: { case: "stringValue", value: "safe" } },
              source: "no_such_source",
              confidence: 0.5,
            },
          ],
        },
      }),
    );
    assert.equal(error.code, Code.InvalidArgument);
    assert.equal(error.domain, "assay.v1");
    assert.equal(error.reason, "ERROR_REASON_UNKNOWN_SOURCE");
    assert.equal(error.reasonValue, ErrorReason.UNKNOWN_SOURCE);
    assert.deepEqual(
      error.fieldViolations.map((violation) => violation.field),
      ["evidence.claims[0].source"],
    );
  });

  it("fails fast with UNAVAILABLE when nothing listens at the target", async () => {
    const nobody = createResolverClient("127.0.0.1:1", { timeoutMs: 2_000 });
    const error = await failure(() => nobody.getResolverPolicy({}));
    assert.ok(
      [Code.Unavailable, Code.DeadlineExceeded].includes(error.code),
      `unexpected code ${error.codeName}`,
    );
  });
});

describe("PlannerService", () => {
  const planner = createPlannerClient(DEFAULT_TARGETS.planner, as("alice"));

  it("plans acquisition for the conflicted example, human review among the candidates", async () => {
    const request = fromJson(
      PlanEvidenceRequestSchema,
      example("plan/safety-conflict-read-only.json"),
    );
    const { plan, resolution } = await planner.planEvidence(request);
    assert.equal(plan.outcome, PlanOutcome.ACQUISITION_RECOMMENDED);
    assert.equal(plan.resolutionStatus, ResolutionStatus.CONFLICTED);
    assert.equal(plan.requiresReview, true);
    assert.ok(plan.gaps.some((gap) => gap.kind === GapKind.UNRESOLVED_CONFLICT));
    const human = plan.candidates.find((c) => c.probe === ProbeKind.HUMAN_REVIEW);
    assert.ok(human, "HUMAN_REVIEW is always a reachable candidate");
    assert.equal(human.availability, Availability.AVAILABLE);
    assert.equal(resolution.status, ResolutionStatus.CONFLICTED);
  });

  it("answers an empty subject with INVALID_ARGUMENT naming `subject`", async () => {
    const error = await failure(() =>
      planner.planEvidence({ subject: "", predicate: "idempotency.mode", evidence: {} }),
    );
    assert.equal(error.code, Code.InvalidArgument);
    assert.equal(error.reason, "ERROR_REASON_INVALID_FIELD");
    assert.ok(
      error.fieldViolations.some((violation) => violation.field === "subject"),
      JSON.stringify(error.fieldViolations),
    );
  });
});

describe("AdjudicationService", () => {
  const adjudication = createAdjudicationClient(DEFAULT_TARGETS.adjudication, as("operator"));
  const reviewerClient = (name) => createAdjudicationClient(DEFAULT_TARGETS.adjudication, as(name));

  it("registers a reviewer, enqueues a case and shows it blinded", async () => {
    const reviewerId = `node-fixture-${RUN}`;
    const { reviewer } = await adjudication.registerReviewer({
      requestId: `register-${RUN}`,
      reviewer: { reviewerId, kind: ReviewerKind.MECHANISM_TEST_FIXTURE },
    });
    assert.equal(reviewer.reviewerId, reviewerId);
    assert.ok(reviewer.registerTime, "register_time is set by the server");

    const candidates = ["idempotency-key", "none"].map((value) => ({
      kind: { case: "stringValue", value },
    }));
    const { case: stored } = await adjudication.enqueueCase({
      requestId: `enqueue-${RUN}`,
      case: {
        tenant: "node-tests",
        subject: "api:payments.create",
        predicate: "idempotency.mode",
        candidateValues: candidates,
        evidenceRefs: ["spec-idem", "trace-idem"],
        context: "Does a retry of payments.create carry an idempotency key?",
        localVerdict: { kind: { case: "stringValue", value: "none" } },
        lineage: { origin: "node-client-test", originRef: RUN },
      },
    });
    assert.match(stored.caseId, /.+/);
    assert.ok(stored.contentDigest.startsWith("sha256:"));

    const { case: blinded } = await adjudication.getBlindedCase({ caseId: stored.caseId });
    assert.equal(blinded.caseId, stored.caseId);
    assert.equal(blinded.round, 1);
    assert.deepEqual(
      blinded.candidateValues.map((value) => value.kind.value),
      ["idempotency-key", "none"],
    );
    // The reviewer's view has no verdict field at all, not merely an empty one.
    assert.equal("localVerdict" in blinded, false);
  });

  it("takes a case to a frozen gold label and streams it in the export", async () => {
    // Dev mode: two fixture reviewers in a tenant of this run. Secured: alice and bob,
    // registered as humans by the operator (attesting as themselves), in their tenant.
    const tenant = SECURE ? "acme" : `node-loop-${RUN}`;
    const none = { kind: { case: "stringValue", value: "none" } };
    const key = { kind: { case: "stringValue", value: "idempotency-key" } };
    const reviewers = SECURE ? ["alice", "bob"] : [`node-a-${RUN}`, `node-b-${RUN}`];
    for (const reviewerId of reviewers) {
      const reviewer = SECURE
        ? { reviewerId, kind: ReviewerKind.HUMAN, attestedBy: "operator" }
        : { reviewerId, kind: ReviewerKind.MECHANISM_TEST_FIXTURE };
      await unlessExists(() => adjudication.registerReviewer({ reviewer }));
    }
    const { case: stored } = await adjudication.enqueueCase({
      case: {
        tenant,
        subject: "api:payments.create",
        predicate: "idempotency.mode",
        candidateValues: [key, none],
        localVerdict: none,
        lineage: { origin: "node-client-test", originRef: RUN },
      },
    });
    let state;
    for (const reviewerId of reviewers) {
      ({ state } = await reviewerClient(reviewerId).submitReview({
        caseId: stored.caseId,
        reviewerId,
        outcome: ReviewOutcome.LABEL,
        label: key,
      }));
    }
    // A plain reviewer learns nothing of the other's answer (dev mode's caller holds every
    // role, so it is told); the operator sees the agreement.
    assert.equal(state, SECURE ? CaseState.AWAITING_RESOLUTION : CaseState.AGREED);
    const { state: seen } = await adjudication.getCaseState({ caseId: stored.caseId });
    assert.equal(seen, CaseState.AGREED);
    const { resolution } = await adjudication.resolveCase({
      caseId: stored.caseId,
      basis: ResolutionBasis.UNANIMOUS_AGREEMENT,
    });
    assert.equal(resolution.labelKey, '"idempotency-key"');
    const { revision } = await adjudication.freezeGoldLabel({ caseId: stored.caseId });
    assert.equal(revision.revision, 1);
    assert.equal(
      revision.provenance,
      SECURE ? LabelingProvenance.HUMAN_ADJUDICATED : LabelingProvenance.SYNTHETIC_MECHANISM_TEST,
    );
    assert.match(revision.digest, /^sha256:[0-9a-f]{64}$/);

    // A server stream: record batches, then exactly one manifest, last.
    const items = [];
    for await (const response of adjudication.exportCorpus({ tenant })) {
      items.push(response.item);
    }
    assert.equal(items.at(-1).case, "manifest");
    assert.equal(items.filter((item) => item.case === "manifest").length, 1);
    const records = items.filter((item) => item.case === "batch").flatMap((item) => item.value.records);
    const mine = records.filter((record) => record.case.caseId === stored.caseId);
    assert.equal(mine.length, 1);
    assert.equal(mine[0].revision.digest, revision.digest);
    const manifest = items.at(-1).value;
    // int64 counts arrive as BigInt in protobuf-es.
    assert.equal(manifest.recordCount, BigInt(records.length));
    if (!SECURE) {
      assert.equal(manifest.recordCount, 1n);
      assert.equal(manifest.syntheticCount, 1n);
      assert.equal(manifest.containsSyntheticLabels, true);
    }
  });

  it("refuses a human reviewer without attestation, naming `reviewer.attested_by`", async () => {
    // Secured, an empty attestation is the operator's own; one in another's name is refused.
    const reviewer = { reviewerId: `node-human-${RUN}`, kind: ReviewerKind.HUMAN };
    if (SECURE) reviewer.attestedBy = "hr ticket 42";
    const error = await failure(() => adjudication.registerReviewer({ reviewer }));
    assert.equal(error.code, SECURE ? Code.PermissionDenied : Code.InvalidArgument);
    assert.equal(
      error.reasonValue,
      SECURE ? ErrorReason.IDENTITY_MISMATCH : ErrorReason.HUMAN_REVIEWER_REQUIRES_ATTESTATION,
    );
    assert.deepEqual(
      error.fieldViolations.map((violation) => violation.field),
      ["reviewer.attested_by"],
    );
  });

  it("answers an unknown case id with NOT_FOUND and CASE_NOT_FOUND", async () => {
    const error = await failure(() => adjudication.getBlindedCase({ caseId: `missing-${RUN}` }));
    assert.equal(error.code, Code.NotFound);
    assert.equal(error.reasonValue, ErrorReason.CASE_NOT_FOUND);
  });
});

// Review work through the Node client against a real adjudication server (started by
// tests/external/test_node_client.py, or by hand with `assay up`; see services.test.js):
// a case that needs three reviews, a review given with a rationale, amended, and withdrawn.
// Dev mode: three fixture reviewers of a tenant of this run. Secured
// (ASSAY_SECURE_CREDENTIALS): alice, bob and carol of acme, each with their own token.

import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  CaseState,
  Code,
  createAdjudicationClient,
  decodeError,
  DEFAULT_TARGETS,
  ErrorReason,
  ReviewerKind,
  ReviewOutcome,
} from "../src/index.js";

const SECURE = process.env.ASSAY_SECURE_CREDENTIALS ?? "";
const RUN = `${process.pid}-${Date.now().toString(36)}`;
const key = { kind: { case: "stringValue", value: "key" } };
const none = { kind: { case: "stringValue", value: "none" } };

async function failure(call) {
  try {
    await call();
  } catch (error) {
    return decodeError(error);
  }
  assert.fail("the call succeeded but was expected to fail");
}

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

describe("AdjudicationService: overlap and revisions", () => {
  const operator = createAdjudicationClient(DEFAULT_TARGETS.adjudication, as("operator"));

  it("needs three reviews, and counts a reviewer's latest record only", async () => {
    const reviewers = SECURE
      ? ["alice", "bob", "carol"]
      : ["ann", "bob", "cy"].map((name) => `node-rev-${name}-${RUN}`);
    for (const reviewerId of reviewers) {
      const reviewer = SECURE
        ? { reviewerId, kind: ReviewerKind.HUMAN, attestedBy: "operator" }
        : { reviewerId, kind: ReviewerKind.MECHANISM_TEST_FIXTURE };
      await unlessExists(() => operator.registerReviewer({ reviewer }));
    }
    const client = (reviewerId) =>
      createAdjudicationClient(DEFAULT_TARGETS.adjudication, as(reviewerId));
    const { case: stored } = await operator.enqueueCase({
      case: {
        tenant: SECURE ? "acme" : `node-rev-${RUN}`,
        subject: "api:payments.create",
        predicate: "idempotency.mode",
        candidateValues: [key, none],
        localVerdict: key,
        lineage: { origin: "node-client-test", originRef: RUN },
        requiredReviews: 3,
      },
    });
    assert.equal(stored.requiredReviews, 3);
    const [ann, bob, cy] = reviewers;
    const submit = (reviewerId, label, rationale = "") =>
      client(reviewerId).submitReview({
        caseId: stored.caseId,
        reviewerId,
        outcome: ReviewOutcome.LABEL,
        label,
        rationale,
      });
    const first = await submit(ann, none, "first look");
    assert.equal(first.review.rationale, "first look");
    const second = await submit(bob, key);
    assert.equal(second.state, CaseState.AWAITING_MORE_REVIEWS);

    const amended = await client(ann).amendReview({
      reviewId: first.review.reviewId,
      outcome: ReviewOutcome.LABEL,
      label: key,
      rationale: "read the changelog",
    });
    assert.equal(amended.review.supersedesReviewId, first.review.reviewId);
    const stale = await failure(() =>
      client(ann).amendReview({
        reviewId: first.review.reviewId,
        outcome: ReviewOutcome.LABEL,
        label: none,
      }),
    );
    assert.equal(stale.code, Code.FailedPrecondition);
    assert.equal(stale.reasonValue, ErrorReason.REVIEW_SUPERSEDED);

    const pulled = await client(bob).withdrawReview({ reviewId: second.review.reviewId });
    assert.equal(pulled.review.outcome, ReviewOutcome.WITHDRAWN);
    assert.equal(pulled.state, CaseState.AWAITING_SECOND_REVIEW);
    await submit(bob, key);
    const third = await submit(cy, key);
    // A reviewer is never told whether the others agreed (blinding); the operator is.
    assert.equal(third.state, SECURE ? CaseState.AWAITING_RESOLUTION : CaseState.AGREED);

    const detail = await operator.getCase({ caseId: stored.caseId });
    assert.equal(detail.state, CaseState.AGREED);
    assert.deepEqual(
      detail.reviews.filter((r) => r.superseded).map((r) => r.reviewId).sort(),
      [first.review.reviewId, second.review.reviewId, pulled.review.reviewId].sort(),
    );
  });
});

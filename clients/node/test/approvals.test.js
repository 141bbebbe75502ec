// ApprovalService from Node, on the adjudication target (the adjudication
// process serves it). Approvals need authenticated callers, so the round trip
// runs against a secured deployment only (ASSAY_SECURE_CREDENTIALS, as
// services.test.js reads it; tests/external/test_node_secure.py sets it): the
// operator plans, asks for a REQUIRES_APPROVAL candidate and watches; dave, the
// example approver of tenant `acme`, approves; the operator consumes it once.
// Against a dev-mode server (tests/external/test_node_client.py) the one check
// is that every call is refused with AUTHENTICATION_REQUIRED (secured: a call
// without a token is CREDENTIALS_MISSING).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  ApprovalDecision,
  ApprovalState,
  Availability,
  Code,
  createApprovalClient,
  createPlannerClient,
  decodeError,
  DEFAULT_TARGETS,
  ErrorReason,
  fromJson,
  PlanEvidenceRequestSchema,
} from "../src/index.js";

const EXAMPLES = new URL("../../../examples/", import.meta.url);
const SECURE = process.env.ASSAY_SECURE_CREDENTIALS ?? "";
const RUN = `${process.pid}-${Date.now().toString(36)}`;

function as(name) {
  return { ca: join(SECURE, "ca.pem"), tokenFile: join(SECURE, "tokens", `${name}.jwt`) };
}

async function failure(call) {
  try {
    await call();
  } catch (error) {
    return decodeError(error);
  }
  assert.fail("the call succeeded but was expected to fail");
}

describe("ApprovalService", () => {
  it("refuses a caller it cannot tell from another", async () => {
    // Dev mode: nobody is authenticated, so approvals are off. Secured: no token, no call.
    const approval = createApprovalClient(
      DEFAULT_TARGETS.adjudication,
      SECURE ? { ca: join(SECURE, "ca.pem") } : {},
    );
    const error = await failure(() => approval.listApprovals({}));
    const [code, reason] = SECURE
      ? [Code.Unauthenticated, ErrorReason.CREDENTIALS_MISSING]
      : [Code.FailedPrecondition, ErrorReason.AUTHENTICATION_REQUIRED];
    assert.equal(error.code, code, JSON.stringify(error));
    assert.equal(error.reasonValue, reason);
  });

  it(
    "asks for a planned candidate, watches it granted, consumes it once",
    { skip: SECURE ? false : "set ASSAY_SECURE_CREDENTIALS to a served credentials folder" },
    async () => {
      const planned = JSON.parse(
        readFileSync(new URL("plan/safety-conflict-read-only.json", EXAMPLES), "utf8"),
      );
      const request = fromJson(PlanEvidenceRequestSchema, planned);
      const planner = createPlannerClient(DEFAULT_TARGETS.planner, as("operator"));
      const { plan } = await planner.planEvidence(request);
      const candidate = plan.candidates.find(
        (c) => c.availability === Availability.REQUIRES_APPROVAL,
      );
      assert.ok(candidate, "the example plan has a REQUIRES_APPROVAL candidate");
      assert.match(candidate.candidateDigest, /^sha256:[0-9a-f]{64}$/);

      const requester = createApprovalClient(DEFAULT_TARGETS.adjudication, as("operator"));
      const approver = createApprovalClient(DEFAULT_TARGETS.adjudication, as("dave"));
      const { approval } = await requester.requestApproval({
        tenant: "acme",
        subject: request.subject,
        predicate: request.predicate,
        candidate,
        reason: `node ${RUN}`,
        requestId: `node-ask-${RUN}`,
      });
      assert.equal(approval.state, ApprovalState.PENDING);
      assert.equal(approval.requester?.subject, "operator");

      // The operator holds no approver role: deciding is not theirs to do.
      const refused = await failure(() =>
        requester.decideApproval({
          approvalId: approval.approvalId,
          decision: ApprovalDecision.APPROVE,
          reason: "my own",
          requestId: `node-self-${RUN}`,
        }),
      );
      assert.equal(refused.code, Code.PermissionDenied, JSON.stringify(refused));
      assert.equal(refused.reasonValue, ErrorReason.ROLE_REQUIRED);

      const watch = requester.watchApproval({ approvalId: approval.approvalId });
      const changes = watch[Symbol.asyncIterator]();
      const states = [(await changes.next()).value.approval.state];
      const decided = await approver.decideApproval({
        approvalId: approval.approvalId,
        decision: ApprovalDecision.APPROVE,
        reason: "read-only CI query",
        requestId: `node-approve-${RUN}`,
      });
      assert.equal(decided.approval.state, ApprovalState.GRANTED);
      states.push((await changes.next()).value.approval.state);
      const used = await requester.consumeApproval({
        approvalId: approval.approvalId,
        candidateDigest: candidate.candidateDigest,
        requestId: `node-consume-${RUN}`,
      });
      assert.equal(used.approval.state, ApprovalState.CONSUMED);
      for (let next = await changes.next(); !next.done; next = await changes.next()) {
        states.push(next.value.approval.state);
      }
      assert.deepEqual(states, [
        ApprovalState.PENDING,
        ApprovalState.GRANTED,
        ApprovalState.CONSUMED,
      ]);

      const again = await failure(() =>
        requester.consumeApproval({
          approvalId: approval.approvalId,
          candidateDigest: candidate.candidateDigest,
          requestId: `node-again-${RUN}`,
        }),
      );
      assert.equal(again.reasonValue, ErrorReason.APPROVAL_ALREADY_CONSUMED);
      const { approvals } = await approver.listApprovals({ tenant: "acme" });
      const listed = approvals.find((a) => a.approvalId === approval.approvalId);
      assert.deepEqual(
        listed?.steps.map((s) => s.actor?.subject),
        ["dave", "operator"],
      );
    },
  );
});

// ListCases through the Node client against a real adjudication server (started by
// tests/external/test_node_client.py, or by hand with `assay up`; see services.test.js).
// The cases of each run carry a predicate of their own, so the listing is filtered to
// them whatever else the server holds; under ASSAY_SECURE_CREDENTIALS the operator lists.

import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  CaseOrder,
  CaseState,
  Code,
  createAdjudicationClient,
  decodeError,
  DEFAULT_TARGETS,
  ErrorReason,
} from "../src/index.js";

const SECURE = process.env.ASSAY_SECURE_CREDENTIALS ?? "";
const RUN = `${process.pid}-${Date.now().toString(36)}`;

function as(name) {
  if (!SECURE) return {};
  return { ca: join(SECURE, "ca.pem"), tokenFile: join(SECURE, "tokens", `${name}.jwt`) };
}

describe("AdjudicationService: finding work", () => {
  const adjudication = createAdjudicationClient(DEFAULT_TARGETS.adjudication, as("operator"));

  it("lists cases by predicate and state, in either order, page by page", async () => {
    const tenant = SECURE ? "acme" : `node-list-${RUN}`;
    const predicate = `node.listing.${RUN}`;
    const made = [];
    for (const n of [0, 1, 2]) {
      const { case: stored } = await adjudication.enqueueCase({
        case: {
          tenant,
          subject: `api:listing.${n}`,
          predicate,
          candidateValues: [{ kind: { case: "stringValue", value: "yes" } }],
          localVerdict: { kind: { case: "stringValue", value: "yes" } },
          lineage: { origin: "node-client-test", originRef: RUN },
        },
      });
      made.push(stored.caseId);
    }

    const found = [];
    let pageToken = "";
    do {
      const page = await adjudication.listCases({ predicate, pageSize: 2, pageToken });
      found.push(...page.cases);
      pageToken = page.nextPageToken;
    } while (pageToken);
    assert.deepEqual(
      found.map((c) => c.caseId),
      made,
    );
    for (const summary of found) {
      assert.equal(summary.state, CaseState.AWAITING_REVIEW);
      assert.equal(summary.tenant, tenant);
      assert.equal(summary.round, 1);
      assert.ok(summary.createTime, "create_time is set");
    }

    const newest = await adjudication.listCases({
      predicate,
      states: [CaseState.AWAITING_REVIEW],
      order: CaseOrder.NEWEST_FIRST,
    });
    assert.deepEqual(
      newest.cases.map((c) => c.caseId),
      [...made].reverse(),
    );
    const none = await adjudication.listCases({ predicate, states: [CaseState.DISAGREED] });
    assert.deepEqual(none.cases, []);
  });

  it("names the bad field of a listing", async () => {
    try {
      await adjudication.listCases({ states: [CaseState.AWAITING_RESOLUTION] });
      assert.fail("the call succeeded but was expected to fail");
    } catch (error) {
      const decoded = decodeError(error);
      assert.equal(decoded.code, Code.InvalidArgument);
      assert.equal(decoded.reasonValue, ErrorReason.INVALID_FIELD);
      assert.deepEqual(
        decoded.fieldViolations.map((violation) => violation.field),
        ["states[0]"],
      );
    }
  });
});

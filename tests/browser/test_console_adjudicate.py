"""An adjudicator decides a disagreement in the console, in a real Chromium against the
real services: alice and bob answer differently (through gRPC, as themselves), carol sees
the case in her worklist, reads it as the service shows it to her (no system verdict,
stored text shown as text), chooses a value and records the decision."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import gold_pb2
from tests.service.adjudication_support import case_message, rid
from tests.support.browser import console_for, launch
from tests.support.secure import SecureStack, secure_stack

TIMEOUT = 20.0
# Stored by the enqueuer and never shown to an adjudicator while the case waits.
HIDDEN_VERDICT = "system-verdict-marker"
# Stored text that a template must show as text, never as markup.
CONTEXT = "<b>two sources</b> disagree"


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async for found in launch():
        yield found


async def seed_disagreement(stack: SecureStack) -> str:
    """alice, bob and carol registered; one acme case that alice and bob answer apart."""
    async with stack.channel("adjudication") as channel:
        stub = adj_grpc.AdjudicationServiceStub(channel)
        operator = stack.auth("operator")
        for name in ("alice", "bob", "carol"):
            await stub.RegisterReviewer(
                adj.RegisterReviewerRequest(
                    request_id=rid(),
                    reviewer=adj.Reviewer(
                        reviewer_id=name, kind=gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE
                    ),
                ),
                metadata=operator,
                timeout=TIMEOUT,
            )
        case = case_message(tenant="acme")
        case.context = CONTEXT
        case.local_verdict.string_value = HIDDEN_VERDICT
        made = await stub.EnqueueCase(
            adj.EnqueueCaseRequest(request_id=rid(), case=case),
            metadata=operator,
            timeout=TIMEOUT,
        )
        case_id: str = made.case.case_id
        for name, label in (("alice", "key"), ("bob", "none")):
            answer = adj.SubmitReviewRequest(
                request_id=rid(),
                case_id=case_id,
                reviewer_id=name,
                outcome=adj.REVIEW_OUTCOME_LABEL,
            )
            answer.label.string_value = label
            await stub.SubmitReview(answer, metadata=stack.auth(name), timeout=TIMEOUT)
        return case_id


async def resolutions(stack: SecureStack, case_id: str) -> list[adj.Resolution]:
    async with stack.channel("adjudication") as channel:
        reply = await adj_grpc.AdjudicationServiceStub(channel).GetCase(
            adj.GetCaseRequest(case_id=case_id),
            metadata=stack.auth("operator"),
            timeout=TIMEOUT,
        )
        return list(reply.resolutions)


class TestAdjudicatorPages:
    async def test_carol_resolves_alice_and_bobs_disagreement(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """The worklist, the redacted case with both reviews, and the recorded decision."""
        async with secure_stack(tmp_path) as stack, console_for(stack) as url:
            case_id = await seed_disagreement(stack)
            page = await browser.new_page()
            await page.goto(f"{url}/adjudicate")
            await page.get_by_role("button", name="Sign in as carol").click()
            await expect(page.get_by_role("heading", name="Disagreements waiting")).to_be_visible()
            await expect(page.get_by_text("1 case waiting for your decision")).to_be_visible()
            await page.get_by_role("link", name="Start with the first").click()
            await expect(page).to_have_url(f"{url}/adjudicate/{case_id}")
            reviews = page.locator("tr.review")
            await expect(reviews).to_have_count(2)
            await expect(reviews.nth(0)).to_contain_text("alice")
            await expect(reviews.nth(0)).to_contain_text('"key"')
            await expect(reviews.nth(1)).to_contain_text("bob")
            await expect(reviews.nth(1)).to_contain_text('"none"')
            await expect(page.get_by_text(CONTEXT)).to_be_visible()
            assert await page.locator("main b").count() == 0
            assert HIDDEN_VERDICT not in await page.content()
            await page.wait_for_load_state("load")  # the keyboard script is deferred
            await page.keyboard.press("2")
            await page.keyboard.press("Enter")
            await expect(page.get_by_text("Your decision is recorded")).to_be_visible()
            await expect(page.get_by_text("No disagreement is waiting")).to_be_visible()
            (decided,) = await resolutions(stack, case_id)
            assert decided.basis == gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION
            assert decided.adjudicator_reviewer_id == "carol"
            assert decided.label.string_value == "none"

    async def test_a_reviewer_without_the_role_is_told_in_plain_words(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """alice reviews but does not adjudicate: the page says so instead of listing cases."""
        async with secure_stack(tmp_path) as stack, console_for(stack) as url:
            await seed_disagreement(stack)
            page = await browser.new_page()
            await page.goto(f"{url}/adjudicate")
            await page.get_by_role("button", name="Sign in as alice").click()
            await expect(
                page.get_by_role("heading", name="Your account does not have the role")
            ).to_be_visible()

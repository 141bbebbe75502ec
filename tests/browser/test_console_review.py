"""A reviewer works through their queue in the console, in a real Chromium, with the
keyboard: signed in (the dev sign-in of the loopback console), the queue, a blinded case,
a digit to choose, Enter to submit, the next case straight after."""

from __future__ import annotations

import re
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


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async for found in launch():
        yield found


async def seed(stack: SecureStack, cases: int, also: tuple[str, ...] = ()) -> list[str]:
    """alice, bob (and ``also``) registered (fixtures, bound to their sign-in), ``cases``
    acme cases."""
    async with stack.channel("adjudication") as channel:
        stub = adj_grpc.AdjudicationServiceStub(channel)
        operator = stack.auth("operator")
        for name in ("alice", "bob", *also):
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
        made = []
        for _ in range(cases):
            reply = await stub.EnqueueCase(
                adj.EnqueueCaseRequest(request_id=rid(), case=case_message(tenant="acme")),
                metadata=operator,
                timeout=TIMEOUT,
            )
            made.append(reply.case.case_id)
        return sorted(made)


async def test_a_reviewer_works_through_the_queue_with_the_keyboard(
    tmp_path: Path, browser: Browser
) -> None:
    async with secure_stack(tmp_path) as stack, console_for(stack) as url:
        made = await seed(stack, 2)
        page = await browser.new_page()
        await page.goto(f"{url}/review")
        await expect(page).to_have_url(f"{url}/signin?next=/review")
        await page.get_by_role("button", name="Sign in as alice").click()
        await expect(page.get_by_role("heading", name="My queue")).to_be_visible()
        await expect(page.get_by_text("2 cases waiting")).to_be_visible()
        await page.get_by_role("link", name="Start reviewing").click()
        # The next case is drawn from the head of the queue, so colleagues are spread out.
        first = re.compile(f"{url}/review/({made[0]}|{made[1]})$")
        await expect(page).to_have_url(first)
        opened = page.url.rsplit("/", 1)[1]
        await page.wait_for_load_state("load")  # the keyboard script is deferred
        await page.keyboard.press("1")
        await expect(page.locator('input[data-key="1"]')).to_be_checked()
        await page.keyboard.press("Enter")
        (other,) = [c for c in made if c != opened]
        await expect(page).to_have_url(f"{url}/review/{other}")
        await page.wait_for_load_state("load")
        await page.keyboard.press("2")
        await expect(page.locator('input[data-key="2"]')).to_be_checked()
        await page.keyboard.press("Enter")
        await expect(page.get_by_text("Nothing is waiting for your review")).to_be_visible()
        cookies = await page.context.cookies()
        (session,) = [c for c in cookies if c["name"] == "__Host-assay"]
        assert session["httpOnly"]
        assert session["secure"]
        assert session["sameSite"] == "Lax"


async def test_a_case_colleagues_finished_first_sends_the_reviewer_on(
    tmp_path: Path, browser: Browser
) -> None:
    """alice opens a case; bob and carol complete its round before she submits: her submit
    is not an error page but the next case, with a line saying why."""
    async with secure_stack(tmp_path) as stack, console_for(stack) as url:
        made = await seed(stack, 2, also=("carol",))
        page = await browser.new_page()
        await page.goto(f"{url}/signin?next=/review")
        await page.get_by_role("button", name="Sign in as alice").click()
        await page.get_by_role("link", name="Start reviewing").click()
        await expect(page.locator("#review-form")).to_be_visible()
        opened = page.url.rsplit("/", 1)[1]
        async with stack.channel("adjudication") as channel:
            stub = adj_grpc.AdjudicationServiceStub(channel)
            for name in ("bob", "carol"):
                answer = adj.SubmitReviewRequest(
                    request_id=rid(),
                    case_id=opened,
                    reviewer_id=name,
                    outcome=adj.REVIEW_OUTCOME_LABEL,
                )
                answer.label.string_value = "key"
                await stub.SubmitReview(answer, metadata=stack.auth(name), timeout=TIMEOUT)
        await page.get_by_label('"key"').check()
        await page.get_by_role("button", name="Submit and go to the next case").click()
        (other,) = [c for c in made if c != opened]
        await expect(page).to_have_url(f"{url}/review/{other}?gone=1")
        await expect(page.get_by_role("status")).to_contain_text("no longer needs your review")

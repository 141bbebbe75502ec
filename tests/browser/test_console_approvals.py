"""An approver decides a pending approval in the console, in a real Chromium against the
real services: the operator asks through gRPC, dave reads what is asked (candidate, side
effects, blocking reasons, requester, expiry) and approves with a reason, and the approval
is GRANTED once, however often the form is sent; a second or a late decision is explained.
A person who both operates and approves is told in plain words that they cannot decide
their own request; another tenant's people see no acme approval."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from assay.runtime.auth.dev_credentials import EXAMPLE_PRINCIPALS, Grantee
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import approval_service_pb2_grpc as pb_grpc
from tests.service.adjudication_support import rid
from tests.support.approvals import PREDICATE, SUBJECT, candidate
from tests.support.browser import console_for, launch
from tests.support.secure import SecureStack, secure_stack

TIMEOUT = 20.0
PRINCIPALS = (
    *EXAMPLE_PRINCIPALS,
    Grantee("both", ("operator", "approver"), ("acme",)),
    Grantee("gina", ("approver",), ("globex",)),
    Grantee("erin", ("approver",), ("acme",)),
)
POLICY = """[approvals]
deny_ends = true
[approvals.quorum]
NETWORK_CALL = 1
"""
# The requester's reason is stored text: shown as text, never as markup.
REASON = "<i>CI status</i> would settle the conflict"


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async for found in launch():
        yield found


async def ask(stack: SecureStack, by: str) -> pb.Approval:
    async with stack.channel("adjudication") as channel:
        reply = await pb_grpc.ApprovalServiceStub(channel).RequestApproval(
            pb.RequestApprovalRequest(
                tenant="acme",
                subject=SUBJECT,
                predicate=PREDICATE,
                candidate=candidate(),
                reason=REASON,
                request_id=rid(),
            ),
            metadata=stack.auth(by),
            timeout=TIMEOUT,
        )
        approval: pb.Approval = reply.approval
        return approval


async def stored(stack: SecureStack, approval_id: str) -> pb.Approval:
    async with stack.channel("adjudication") as channel:
        reply = await pb_grpc.ApprovalServiceStub(channel).GetApproval(
            pb.GetApprovalRequest(approval_id=approval_id),
            metadata=stack.auth("operator"),
            timeout=TIMEOUT,
        )
        approval: pb.Approval = reply.approval
        return approval


@contextlib.asynccontextmanager
async def approvals_console(directory: Path) -> AsyncIterator[tuple[SecureStack, str]]:
    """The secure stack with the approval policy, and the console's URL in front of it."""
    async with (
        secure_stack(directory, True, PRINCIPALS, approvals=POLICY) as stack,
        console_for(stack) as url,
    ):
        yield stack, url


async def sign_in(browser: Browser, url: str, name: str) -> Page:
    """A new page signed in as ``name`` (dev sign-in), on the approvals list."""
    page = await browser.new_page()
    await page.goto(f"{url}/approvals")
    await page.get_by_role("button", name=f"Sign in as {name}", exact=True).click()
    return page


class TestApproverPages:
    async def test_dave_approves_the_operators_request_once(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """The pending approval with what it asks for; approve with a reason; GRANTED, and a
        second send of the same rendered form is the same one decision."""
        async with approvals_console(tmp_path) as (stack, url):
            asked = await ask(stack, "operator")
            page = await sign_in(browser, url, "dave")
            await expect(page.get_by_role("heading", name="Approvals waiting")).to_be_visible()
            card = page.locator("article.approval")
            await expect(card).to_have_count(1)
            await expect(card).to_contain_text(asked.approval_id)
            await expect(card).to_contain_text("query ci status")
            await expect(card.locator(".effects")).to_have_text("network call")
            await expect(card.locator(".blocking")).to_have_text("side effect not granted")
            await expect(card.locator(".requester")).to_have_text("operator")
            await expect(card.locator(".expires")).to_contain_text("UTC")
            await expect(card.get_by_text(REASON)).to_be_visible()
            assert await card.locator("i").count() == 0
            form = card.locator("form.decide")
            fields: dict[str, str | float | bool] = {
                "csrf": await form.locator("input[name=csrf]").input_value(),
                "attempt": await form.locator("input[name=attempt]").input_value(),
                "decision": "approve",
                "reason": "the CI query only reads",
            }
            await card.get_by_label("Approve").check()
            await card.get_by_label("Why").fill("the CI query only reads")
            await card.get_by_role("button", name="Record my decision").click()
            await expect(page.get_by_text("Your decision is recorded")).to_be_visible()
            await expect(page.locator(".state")).to_contain_text("granted")
            # The same rendered form sent again (a reload's resend, a second click that got
            # through) carries the same request id: the service answers with the same decision.
            again = await page.request.post(
                f"{url}/approvals/{asked.approval_id}", form=fields, max_redirects=0
            )
            assert again.status == 303
            # Another rendered form is another decision: refused, in plain words.
            late = await page.request.post(
                f"{url}/approvals/{asked.approval_id}",
                form={**fields, "attempt": "another-form"},
                max_redirects=0,
            )
            assert late.status == 400
            assert "You have already decided on this approval" in await late.text()
            granted = await stored(stack, asked.approval_id)
            assert granted.state == pb.APPROVAL_STATE_GRANTED
            assert [(s.actor.subject, s.reason) for s in granted.steps] == [
                ("dave", "the CI query only reads")
            ]
            await page.goto(f"{url}/approvals")
            await expect(page.get_by_text("No approval is waiting")).to_be_visible()

    async def test_the_requester_who_also_approves_is_refused_in_plain_words(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """The service's APPROVER_IS_REQUESTER said as a sentence; the approval stays pending."""
        async with approvals_console(tmp_path) as (stack, url):
            asked = await ask(stack, "both")
            page = await sign_in(browser, url, "both")
            card = page.locator("article.approval")
            await expect(card.locator(".requester")).to_have_text("both")
            await card.get_by_label("Approve").check()
            await card.get_by_label("Why").fill("looks fine to me")
            await card.get_by_role("button", name="Record my decision").click()
            await expect(
                page.get_by_role("heading", name="You asked for this approval yourself")
            ).to_be_visible()
            assert (await stored(stack, asked.approval_id)).state == pb.APPROVAL_STATE_PENDING

    async def test_a_decision_that_comes_too_late_is_explained(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """erin has the request open while dave denies it (one denial ends it): her approve
        is refused as no longer pending, in plain words."""
        async with approvals_console(tmp_path) as (stack, url):
            asked = await ask(stack, "operator")
            page = await sign_in(browser, url, "erin")
            card = page.locator("article.approval")
            await card.get_by_label("Approve").check()
            await card.get_by_label("Why").fill("fine by me")
            async with stack.channel("adjudication") as channel:
                await pb_grpc.ApprovalServiceStub(channel).DecideApproval(
                    pb.DecideApprovalRequest(
                        approval_id=asked.approval_id,
                        decision=pb.APPROVAL_DECISION_DENY,
                        reason="not during the freeze",
                        request_id=rid(),
                    ),
                    metadata=stack.auth("dave"),
                    timeout=TIMEOUT,
                )
            await card.get_by_role("button", name="Record my decision").click()
            await expect(
                page.get_by_role("heading", name="This approval is no longer waiting")
            ).to_be_visible()
            assert (await stored(stack, asked.approval_id)).state == pb.APPROVAL_STATE_DENIED

    async def test_another_tenants_people_see_no_acme_approval(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """mallory (globex, no approver role) is told so, and no acme request reaches her;
        gina (globex's approver) finds nothing pending."""
        async with approvals_console(tmp_path) as (stack, url):
            asked = await ask(stack, "operator")
            page = await sign_in(browser, url, "mallory")
            await expect(
                page.get_by_role("heading", name="Your account does not have the role")
            ).to_be_visible()
            await page.goto(f"{url}/approvals/{asked.approval_id}")
            await expect(page.locator("h1")).not_to_contain_text(asked.approval_id)
            content = await page.content()
            assert asked.approval_id not in content
            assert "payments-api" not in content
            other = await sign_in(browser, url, "gina")
            await expect(other.get_by_text("No approval is waiting")).to_be_visible()
            await other.goto(f"{url}/approvals/{asked.approval_id}")
            await expect(
                other.get_by_role("heading", name="There is no such approval")
            ).to_be_visible()

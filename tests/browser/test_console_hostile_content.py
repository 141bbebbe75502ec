"""Hostile text stored in every field a console page shows, in a real Chromium: each page
shows it as text and nothing of it runs.

The case's subject, predicate, context, evidence and candidate values, a reviewer's
reason, an approval's subject, predicate and reason and an approver's reason hold script
tags, attribute breakouts, markup, ANSI escapes, bidi controls, zero-width characters and
very long strings; the operator who registers the reviewers (so ``attested_by``), asks for
the approval (its requester) and appears as an audit event's actor is a principal whose
subject is itself an attribute breakout. On every page: no dialog opens, no injected
element is in the DOM, the literal text is in the page's text, every response carries the
Content-Security-Policy, and the browser reports no blocked inline script (one would mean
something got as far as the DOM and tried to run).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.async_api import Browser, ConsoleMessage, Dialog, Page, Response, expect

from assay.runtime.auth.dev_credentials import EXAMPLE_PRINCIPALS, Grantee
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import approval_service_pb2_grpc as pb_grpc
from assay.v1 import gold_pb2
from tests.support.approvals import candidate
from tests.support.browser import console_for, launch
from tests.support.eventually import eventually_async
from tests.support.secure import SecureStack, secure_stack

TIMEOUT = 20.0
SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
MARKUP = '<b class="injected">bold</b><a class="injected" href="javascript:alert(1)">go</a>'
ANSI = "\x1b[2J\x1b[31mred\x1b[0m"
BIDI = "invoice\u202etxt.exe\u2066isolated\u2069"
ZERO_WIDTH = "zero\u200bwidth\u200cjoin\u200dand\ufeffbom"
# The operator's own subject: a token file's name, so it holds no "/".
HOSTILE_OPERATOR = BREAKOUT
PRINCIPALS = (
    *EXAMPLE_PRINCIPALS,
    Grantee(HOSTILE_OPERATOR, ("operator", "auditor", "reader"), ("*",)),
    Grantee("erin", ("approver", "reader"), ("acme",)),
)
POLICY = """[approvals]
[approvals.quorum]
NETWORK_CALL = 2
"""

CASE_SUBJECT = f"{SCRIPT} {BIDI}"
CASE_PREDICATE = f"{BREAKOUT} {ZERO_WIDTH}"
CASE_CONTEXT = f"{MARKUP} {ANSI} " + "L" * 3800
EVIDENCE = (SCRIPT, BREAKOUT, f"{ANSI}{BIDI}", "E" * 1000)
CANDIDATES = (SCRIPT, f"{BREAKOUT}{ZERO_WIDTH}")
VERDICT = f"{MARKUP}{BIDI}"
REVIEW_REASON = f"{SCRIPT}{BREAKOUT}{ANSI}{BIDI}{ZERO_WIDTH}" + "R" * 900
APPROVAL_SUBJECT = f"{SCRIPT}{BIDI}"
APPROVAL_PREDICATE = f"{BREAKOUT}{ZERO_WIDTH}"
APPROVAL_REASON = f"{MARKUP}{ANSI}" + "Q" * 1500
DECISION_REASON = f"{SCRIPT}{BREAKOUT}{BIDI}"


def as_json(value: str) -> str:
    """How a page shows a candidate value or label: its JSON, as text."""
    return json.dumps(value, ensure_ascii=False)


@dataclass
class Watch:
    """Everything a page did that hostile text could cause: dialogs, console errors,
    page errors, and each console response's Content-Security-Policy."""

    origin: str
    dialogs: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    without_csp: list[str] = field(default_factory=list)
    responses: int = 0

    def attach(self, page: Page) -> Page:
        async def dialog(opened: Dialog) -> None:
            self.dialogs.append(opened.message)
            await opened.dismiss()

        def console(message: ConsoleMessage) -> None:
            # Chromium reports what the policy blocked as a console error naming it.
            if message.type == "error" and "Content Security Policy" in message.text:
                self.refused.append(message.text)

        def response(answer: Response) -> None:
            if answer.url.startswith(self.origin):
                self.responses += 1
                if "content-security-policy" not in answer.headers:
                    self.without_csp.append(answer.url)

        page.on("dialog", dialog)
        page.on("console", console)
        page.on("pageerror", lambda error: self.page_errors.append(str(error)))
        page.on("response", response)
        return page

    async def check(self, page: Page, *shown: str) -> None:
        """Nothing ran or was injected so far, and each of ``shown`` is in the page's text."""
        for selector in (
            "img[src=x]",
            "script:not([src])",
            ".injected",
            "[onerror]",
            "a[href^='javascript:']",
        ):
            assert await page.locator(selector).count() == 0, (page.url, selector)
        text = await page.locator("body").text_content() or ""
        for literal in shown:
            assert literal in text, (page.url, literal[:80])
        assert self.dialogs == [], self.dialogs
        assert self.refused == [], self.refused
        assert self.page_errors == [], self.page_errors
        assert self.without_csp == [], self.without_csp
        assert self.responses > 0


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async for found in launch():
        yield found


def hostile_case() -> adj.Case:
    case = adj.Case(
        tenant="acme",
        subject=CASE_SUBJECT,
        predicate=CASE_PREDICATE,
        evidence_refs=EVIDENCE,
        context=CASE_CONTEXT,
        lineage=adj.CaseLineage(origin=SCRIPT, origin_ref=BREAKOUT),
    )
    for value in CANDIDATES:
        case.candidate_values.add().string_value = value
    case.local_verdict.string_value = VERDICT
    return case


async def seed_case(stack: SecureStack) -> str:
    """alice, bob and carol registered as people by the hostile operator (so it is their
    ``attested_by``), and the hostile case enqueued by it."""
    operator = stack.auth(HOSTILE_OPERATOR)
    async with stack.channel("adjudication") as channel:
        stub = adj_grpc.AdjudicationServiceStub(channel)
        for name in ("alice", "bob", "carol"):
            await stub.RegisterReviewer(
                adj.RegisterReviewerRequest(
                    request_id=name,
                    reviewer=adj.Reviewer(reviewer_id=name, kind=gold_pb2.REVIEWER_KIND_HUMAN),
                ),
                metadata=operator,
                timeout=TIMEOUT,
            )
        made = await stub.EnqueueCase(
            adj.EnqueueCaseRequest(request_id="hostile-case", case=hostile_case()),
            metadata=operator,
            timeout=TIMEOUT,
        )
        return str(made.case.case_id)


async def bob_cannot_decide(stack: SecureStack, case_id: str) -> None:
    async with stack.channel("adjudication") as channel:
        await adj_grpc.AdjudicationServiceStub(channel).SubmitReview(
            adj.SubmitReviewRequest(
                request_id="bob-review",
                case_id=case_id,
                reviewer_id="bob",
                outcome=adj.REVIEW_OUTCOME_UNRESOLVED,
                reason=REVIEW_REASON,
            ),
            metadata=stack.auth("bob"),
            timeout=TIMEOUT,
        )


async def seed_approval(stack: SecureStack) -> str:
    """The hostile operator asks; dave approves with a hostile reason; one more approval is
    needed, so it stays pending with dave's step shown."""
    async with stack.channel("adjudication") as channel:
        stub = pb_grpc.ApprovalServiceStub(channel)
        asked = await stub.RequestApproval(
            pb.RequestApprovalRequest(
                tenant="acme",
                subject=APPROVAL_SUBJECT,
                predicate=APPROVAL_PREDICATE,
                candidate=candidate(APPROVAL_SUBJECT, APPROVAL_PREDICATE),
                reason=APPROVAL_REASON,
                request_id="hostile-approval",
            ),
            metadata=stack.auth(HOSTILE_OPERATOR),
            timeout=TIMEOUT,
        )
        approval_id = str(asked.approval.approval_id)
        await stub.DecideApproval(
            pb.DecideApprovalRequest(
                approval_id=approval_id,
                decision=pb.APPROVAL_DECISION_APPROVE,
                reason=DECISION_REASON,
                request_id="dave-decides",
            ),
            metadata=stack.auth("dave"),
            timeout=TIMEOUT,
        )
        return approval_id


async def signed_in(browser: Browser, watch: Watch, url: str, start: str, name: str) -> Page:
    page = watch.attach(await browser.new_page())
    await page.goto(f"{url}{start}")
    await page.get_by_role("button", name=f"Sign in as {name}", exact=True).click()
    await expect(page).to_have_url(f"{url}{start}")
    return page


async def choose(page: Page, key: str) -> None:
    """Choose with ``key`` once the page's script listens, and submit with Enter."""
    await page.wait_for_load_state("domcontentloaded")
    await page.keyboard.press(key)
    await expect(page.locator(f"input[data-key='{key}']")).to_be_checked()
    await page.keyboard.press("Enter")


class TestHostileContent:
    async def test_case_fields_reasons_and_attestations_are_shown_as_text(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """The sign-in page, alice's queue and case (she answers in the page), carol's
        worklist and case with bob's reason, the operator's home, case view and freeze, and
        the audit page's event with the operator as its actor."""
        async with (
            secure_stack(tmp_path, principals=PRINCIPALS) as stack,
            console_for(stack) as url,
        ):
            case_id = await seed_case(stack)
            watch = Watch(url)

            page = watch.attach(await browser.new_page())
            await page.goto(f"{url}/signin")
            await watch.check(page, f"Sign in as {HOSTILE_OPERATOR}")
            await page.get_by_role("button", name="Sign in as alice", exact=True).click()
            await page.goto(f"{url}/review")
            await expect(page.get_by_text("1 case waiting")).to_be_visible()
            await watch.check(page, CASE_SUBJECT, CASE_PREDICATE)
            await page.get_by_role("link", name="Start reviewing").click()
            await expect(page).to_have_url(f"{url}/review/{case_id}")
            await watch.check(
                page,
                CASE_SUBJECT,
                CASE_PREDICATE,
                CASE_CONTEXT,
                *EVIDENCE,
                *(as_json(v) for v in CANDIDATES),
            )
            assert VERDICT not in await page.content()
            await choose(page, "2")
            await expect(page.get_by_text("Nothing is waiting for your review")).to_be_visible()
            await watch.check(page)

            await bob_cannot_decide(stack, case_id)
            carol = await signed_in(browser, watch, url, "/adjudicate", "carol")
            await expect(carol.get_by_text("1 case waiting for your decision")).to_be_visible()
            await watch.check(carol, CASE_SUBJECT, CASE_PREDICATE)
            await carol.goto(f"{url}/adjudicate/{case_id}")
            await expect(carol.locator("tr.review")).to_have_count(2)
            await watch.check(
                carol,
                CASE_SUBJECT,
                CASE_PREDICATE,
                CASE_CONTEXT,
                *EVIDENCE,
                *(as_json(v) for v in CANDIDATES),
                REVIEW_REASON,
            )
            assert VERDICT not in await carol.content()
            await choose(carol, "1")
            await expect(carol.get_by_text("Your decision is recorded")).to_be_visible()
            await watch.check(carol)

            operator = await signed_in(browser, watch, url, "/operate", HOSTILE_OPERATOR)
            await expect(operator.locator("tr", has_text="alice")).to_contain_text("human")
            await watch.check(operator, f"Signed in as {HOSTILE_OPERATOR}")
            vouched = operator.locator("tr", has_text="carol").locator("td").nth(2)
            assert await vouched.text_content() == HOSTILE_OPERATOR
            await operator.goto(f"{url}/operate/cases/{case_id}")
            await watch.check(
                operator,
                CASE_SUBJECT,
                CASE_PREDICATE,
                CASE_CONTEXT,
                as_json(VERDICT),
                *(as_json(v) for v in CANDIDATES),
                REVIEW_REASON,
            )
            await operator.get_by_role("button", name="Freeze round 1 into a gold label").click()
            await expect(operator.get_by_text("Frozen into a gold-label revision")).to_be_visible()
            await watch.check(operator, CASE_SUBJECT, as_json(CANDIDATES[0]))

            await operator.goto(f"{url}/audit/inclusion?sequence=1")
            await expect(operator.locator(".inclusion")).to_contain_text("Yes: included")
            await watch.check(operator, HOSTILE_OPERATOR)

    async def test_approval_fields_requester_and_steps_are_shown_as_text(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """erin's pending list and the approval's own page: its subject, predicate and
        reason, the hostile requester, and dave's step with his reason."""
        async with (
            secure_stack(tmp_path, principals=PRINCIPALS, approvals=POLICY) as stack,
            console_for(stack) as url,
        ):
            approval_id = await seed_approval(stack)
            watch = Watch(url)
            shown = (
                APPROVAL_SUBJECT,
                APPROVAL_PREDICATE,
                APPROVAL_REASON,
                HOSTILE_OPERATOR,
                DECISION_REASON,
            )
            page = await signed_in(browser, watch, url, "/approvals", "erin")
            card = page.locator("article.approval")
            await expect(card).to_have_count(1)
            await expect(card.locator(".requester")).to_have_text(HOSTILE_OPERATOR)
            await watch.check(page, *shown)
            await page.goto(f"{url}/approvals/{approval_id}")
            await expect(page.locator(".state")).to_contain_text("pending")
            await watch.check(page, *shown)
            await card.get_by_label("Approve").check()
            await card.get_by_label("Why").fill(DECISION_REASON)
            await card.get_by_role("button", name="Record my decision").click()
            await expect(page.get_by_text("Your decision is recorded")).to_be_visible()
            await expect(page.locator(".state")).to_contain_text("granted")
            await watch.check(page, *shown)

    async def test_the_watch_sees_an_injection_the_policy_blocks(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """The checks above can fail: an inline script and an inline event handler put into
        a console page by hand are refused by the policy, reported, and found in the DOM."""
        async with secure_stack(tmp_path) as stack, console_for(stack) as url:
            watch = Watch(url)
            page = watch.attach(await browser.new_page())
            await page.goto(f"{url}/signin")
            await page.evaluate(
                """() => {
                    const script = document.createElement("script");
                    script.textContent = "alert(1)";
                    document.body.appendChild(script);
                    const image = document.createElement("img");
                    image.setAttribute("onerror", "alert(2)");
                    image.src = "x";
                    document.body.appendChild(image);
                }"""
            )
            await expect(page.locator("img[src=x]")).to_have_count(1)
            await eventually_async(
                lambda: len(watch.refused) >= 2, message="both refusals reported"
            )
            assert watch.dialogs == []
            with pytest.raises(AssertionError):
                await watch.check(page)

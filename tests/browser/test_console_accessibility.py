"""Every page of the console checked with axe-core in a real Chromium, each as the role it is
for and with seeded data (a queue, a disagreement, an approval, charted agreement, a frozen
case in the ledger): no serious or critical violation. What axe does not try is checked
beside it: the skip link comes first, no page scrolls sideways at 320 px, the heatmap's
numbers have the contrast text needs, and each chart's figures are also in a table. The same
walk saves a screenshot of each page, under the test's folder or, when ``ASSAY_SCREENSHOTS``
names a folder, there (how the pictures in docs/console.md are made again).

axe-core comes from the axe-playwright-python wheel (axe.min.js is inside it): nothing is
fetched while the tests run."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.async_playwright import Axe  # type: ignore[import-untyped]
from playwright.async_api import Browser, BrowserContext, Page, ViewportSize, expect

from assay.runtime.auth.dev_credentials import EXAMPLE_PRINCIPALS
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import approval_service_pb2 as approvals
from assay.v1 import approval_service_pb2_grpc as approvals_grpc
from assay.v1 import gold_pb2
from tests.browser.test_console_approvals import POLICY
from tests.browser.test_console_operate import resolve_as_carol, reviewed_pairs
from tests.service.adjudication_support import case_message, rid
from tests.support.approvals import PREDICATE, SUBJECT, candidate
from tests.support.browser import console_for, launch
from tests.support.secure import SecureStack, secure_stack

TIMEOUT = 20.0
# What no page may have; axe's moderate and minor findings are not failed on.
REFUSED_IMPACTS = ("serious", "critical")
# The width the screenshots are taken at (docs/console.md shows them at this width).
VIEWPORT: ViewportSize = {"width": 1200, "height": 800}
# WCAG's reflow width: at 320 CSS pixels a page needs no sideways scrolling.
NARROW: ViewportSize = {"width": 320, "height": 640}


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async for found in launch():
        yield found


@dataclass
class Walk:
    """Checks pages, saves their screenshots, and remembers what each check found."""

    screens: Path
    axe: Axe = field(default_factory=Axe)
    found: dict[str, list[str]] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)

    async def check(self, page: Page, name: str) -> None:
        """Screenshot ``page`` as ``name``.png and run axe-core on it; and two things axe does
        not try: the first Tab from the page's top reaches "Skip to content", shown on
        screen, and the page needs no sideways scrolling in a window 320 pixels wide."""
        await page.wait_for_load_state("load")
        await page.screenshot(path=str(self.screens / f"{name}.png"), full_page=True)
        results = await self.axe.run(page)
        violations: list[dict[str, Any]] = results.response["violations"]
        refused = [
            f"{v['id']} ({v['impact']}): {v['help']} at "
            + ", ".join(str(n["target"]) for n in v["nodes"])
            for v in violations
            if v["impact"] in REFUSED_IMPACTS
        ]
        if refused:
            self.found[name] = refused
        if not await page.locator("dialog[open]").count():
            await self.skip_link_comes_first(page, name)
        await self.fits_a_narrow_window(page, name)
        self.names.append(name)

    async def fits_a_narrow_window(self, page: Page, name: str) -> None:
        await page.set_viewport_size(NARROW)
        try:
            wide = await page.evaluate("document.documentElement.scrollWidth")
        finally:
            await page.set_viewport_size(VIEWPORT)
        if wide > NARROW["width"]:
            self.found.setdefault(name, []).append(
                f"{wide} px wide in a window of {NARROW['width']} px"
            )

    async def skip_link_comes_first(self, page: Page, name: str) -> None:
        text, shown = await first_tab_stop(page)
        if (text, shown) != ("Skip to content", True):
            problem = f"the first Tab stop is {text!r}" + ("" if shown else ", off screen")
            self.found.setdefault(name, []).append(problem)


def contrast(one: str, other: str) -> float:
    """WCAG's contrast ratio of two ``#rrggbb`` or ``#rgb`` colours."""

    def luminance(colour: str) -> float:
        digits = colour.lstrip("#")
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        channels = [int(digits[i : i + 2], 16) / 255 for i in (0, 2, 4)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    dark, light = sorted((luminance(one), luminance(other)))
    return (light + 0.05) / (dark + 0.05)


async def heatmap_contrasts(page: Page) -> list[float]:
    """The contrast of each heatmap number on its cell: axe cannot tell what lies behind
    text drawn over an SVG shape (it leaves it for a person to check), so the walk does."""
    contrasts = []
    for cell in await page.locator("svg.heatmap g.cell").all():
        fill = await cell.locator("rect").get_attribute("fill")
        ink = await cell.locator("text").get_attribute("fill")
        assert fill, "a heatmap cell says its fill"
        assert ink, "a heatmap number says its colour"
        contrasts.append(contrast(fill, ink))
    return contrasts


async def first_tab_stop(page: Page) -> tuple[str, bool]:
    """The text of what the first Tab from the top of ``page`` focuses, and whether it is
    inside the viewport."""
    # Focus starts at the document's top (as on arriving at the page, autofocus aside).
    await page.evaluate(
        "() => { const top = document.documentElement; top.tabIndex = -1; top.focus();"
        " top.removeAttribute('tabindex'); window.scrollTo(0, 0); }"
    )
    await page.keyboard.press("Tab")
    focused = page.locator(":focus")
    text = (await focused.inner_text()).strip()
    box = await focused.bounding_box()
    shown = box is not None and box["x"] >= 0 and box["y"] >= 0 and box["width"] > 0
    return text, shown


def screens_folder(tmp_path: Path) -> Path:
    chosen = os.environ.get("ASSAY_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path / "screens"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def person(browser: Browser, url: str, name: str, start: str) -> Page:
    """A browser of its own for ``name``, signed in through the dev sign-in at ``start``.

    The console's Content-Security-Policy stays on: axe-core is evaluated through
    Playwright's ``page.evaluate``, which the page's CSP does not govern, so the pages are
    checked exactly as they are served."""
    context: BrowserContext = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    await page.goto(f"{url}{start}")
    await page.get_by_role("button", name=f"Sign in as {name}", exact=True).click()
    await expect(page).to_have_url(f"{url}{start}")
    return page


async def register(stack: SecureStack, *names: str) -> None:
    async with stack.channel("adjudication") as channel:
        stub = adj_grpc.AdjudicationServiceStub(channel)
        for name in names:
            await stub.RegisterReviewer(
                adj.RegisterReviewerRequest(
                    request_id=rid(),
                    reviewer=adj.Reviewer(
                        reviewer_id=name, kind=gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE
                    ),
                ),
                metadata=stack.auth("operator"),
                timeout=TIMEOUT,
            )


async def ask(stack: SecureStack) -> str:
    """The operator asks for the grant a blocked candidate needs; the approval's id."""
    async with stack.channel("adjudication") as channel:
        reply = await approvals_grpc.ApprovalServiceStub(channel).RequestApproval(
            approvals.RequestApprovalRequest(
                tenant="acme",
                subject=SUBJECT,
                predicate=PREDICATE,
                candidate=candidate(),
                reason="the CI status would settle the conflict",
                request_id=rid(),
            ),
            metadata=stack.auth("operator"),
            timeout=TIMEOUT,
        )
        return str(reply.approval.approval_id)


async def disagreement(stack: SecureStack) -> str:
    """One more acme case alice and bob answer apart."""
    async with stack.channel("adjudication") as channel:
        stub = adj_grpc.AdjudicationServiceStub(channel)
        made = await stub.EnqueueCase(
            adj.EnqueueCaseRequest(request_id=rid(), case=case_message(tenant="acme")),
            metadata=stack.auth("operator"),
            timeout=TIMEOUT,
        )
        for name, label in (("alice", "key"), ("bob", "none")):
            answer = adj.SubmitReviewRequest(
                request_id=rid(),
                case_id=made.case.case_id,
                reviewer_id=name,
                outcome=adj.REVIEW_OUTCOME_LABEL,
            )
            answer.label.string_value = label
            await stub.SubmitReview(answer, metadata=stack.auth(name), timeout=TIMEOUT)
        return str(made.case.case_id)


async def frozen(stack: SecureStack, case_id: str) -> str:
    """``case_id`` resolved by carol and frozen by the operator."""
    await resolve_as_carol(stack, case_id)
    async with stack.channel("adjudication") as channel:
        await adj_grpc.AdjudicationServiceStub(channel).FreezeGoldLabel(
            adj.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id),
            metadata=stack.auth("operator"),
            timeout=TIMEOUT,
        )
    return case_id


async def waiting_cases(stack: SecureStack, count: int) -> None:
    """``count`` more acme cases nobody has answered (alice's queue)."""
    async with stack.channel("adjudication") as channel:
        stub = adj_grpc.AdjudicationServiceStub(channel)
        for _ in range(count):
            await stub.EnqueueCase(
                adj.EnqueueCaseRequest(request_id=rid(), case=case_message(tenant="acme")),
                metadata=stack.auth("operator"),
                timeout=TIMEOUT,
            )


# Some twenty pages, each loaded, photographed and checked by axe: longer than one
# browser test's default bound on a loaded machine.
@pytest.mark.timeout(300)
async def test_every_page_has_no_serious_or_critical_accessibility_violation(
    tmp_path: Path, browser: Browser
) -> None:
    """Sign-in, home, each role's pages and an error page, each checked and photographed."""
    walk = Walk(screens_folder(tmp_path))
    async with (
        secure_stack(tmp_path, True, EXAMPLE_PRINCIPALS, approvals=POLICY) as stack,
        console_for(stack) as url,
    ):
        await register(stack, "alice", "bob", "carol")
        open_dispute = await disagreement(stack)
        disputed = await frozen(stack, await disagreement(stack))
        await waiting_cases(stack, 3)
        answers = [("key", "key")] * 12 + [("none", "none")] * 6 + [("key", "none")] * 2
        await reviewed_pairs(stack, answers)
        asked = await ask(stack)

        anonymous = await (await browser.new_context(viewport=VIEWPORT)).new_page()
        await anonymous.goto(f"{url}/signin")
        await expect(anonymous.get_by_role("heading", name="Sign in")).to_be_visible()
        await walk.check(anonymous, "signin")
        async with console_for(stack, dev_mode=True, dev_credentials=None) as dev_url:
            await anonymous.goto(f"{dev_url}/signin")
            await expect(anonymous.get_by_label("Name to act as")).to_be_visible()
            await walk.check(anonymous, "signin-dev-mode")

        alice = await person(browser, url, "alice", "/")
        await walk.check(alice, "home")
        await alice.goto(f"{url}/review")
        await expect(alice.get_by_role("heading", name="My queue")).to_be_visible()
        await walk.check(alice, "review-queue")
        await alice.get_by_role("link", name="Start reviewing").click()
        await expect(alice.locator("form")).not_to_have_count(0)
        await walk.check(alice, "review-case")
        await alice.keyboard.press("?")
        await expect(alice.get_by_role("dialog", name="Keyboard shortcuts")).to_be_visible()
        await walk.check(alice, "keyboard-help")
        await alice.keyboard.press("Escape")
        await alice.goto(f"{url}/audit")
        await expect(
            alice.get_by_role("heading", name="Your account does not have the role")
        ).to_be_visible()
        await walk.check(alice, "error-role")
        await alice.goto(f"{url}/review/no-such-case")
        await walk.check(alice, "error-no-case")

        mallory = await person(browser, url, "mallory", "/review")
        await expect(mallory.get_by_role("heading", name="You are not registered")).to_be_visible()
        await walk.check(mallory, "error-not-registered")

        carol = await person(browser, url, "carol", "/adjudicate")
        await expect(carol.get_by_role("heading", name="Disagreements waiting")).to_be_visible()
        await walk.check(carol, "adjudicate-list")
        await carol.goto(f"{url}/adjudicate/{open_dispute}")
        await expect(carol.locator("tr.review")).to_have_count(2)
        await walk.check(carol, "adjudicate-case")

        dave = await person(browser, url, "dave", "/approvals")
        await expect(dave.get_by_role("heading", name="Approvals waiting")).to_be_visible()
        await walk.check(dave, "approvals")
        await dave.goto(f"{url}/approvals/{asked}")
        await expect(dave.locator("article.approval")).to_have_count(1)
        await walk.check(dave, "approval")
        await dave.get_by_label("Approve").check()
        await dave.get_by_label("Why").fill("the CI query only reads")
        await dave.get_by_role("button", name="Record my decision").click()
        await expect(dave.get_by_text("Your decision is recorded")).to_be_visible()
        await walk.check(dave, "approval-decided")

        operator = await person(browser, url, "operator", "/operate")
        await expect(operator.get_by_role("heading", name="Operate", exact=True)).to_be_visible()
        await walk.check(operator, "operate")
        await operator.goto(f"{url}/operate/cases/{disputed}")
        await expect(operator.locator("tr.revision")).to_have_count(1)
        await walk.check(operator, "operate-case")
        await operator.goto(f"{url}/operate/agreement?tenant=acme")
        await expect(operator.locator("svg.heatmap")).to_be_visible()
        await walk.check(operator, "agreement")
        # A chart is one image to assistive technology (role="img" hides its texts): each
        # figure it draws is in a table as well.
        await expect(operator.locator("tr.pair")).to_have_count(1)
        await expect(operator.locator("tr.category")).to_have_count(2)
        contrasts = await heatmap_contrasts(operator)
        assert contrasts
        assert min(contrasts) >= 4.5, contrasts
        await operator.goto(f"{url}/operate")
        await operator.locator("#file").set_input_files(
            {"name": "cases.jsonl", "mimeType": "text/plain", "buffer": b"not json\n"}
        )
        await operator.get_by_role("button", name="Enqueue all or nothing").click()
        await expect(operator.locator("tr.rejected-row")).to_have_count(1)
        await walk.check(operator, "operate-upload-refused")
        await operator.get_by_label("Reviewer id").fill("erin")
        await operator.get_by_label("vouch that this reviewer is a person").check()
        await operator.get_by_role("button", name="Register").click()
        await expect(operator.get_by_role("status")).to_have_text("Registered erin.")
        await walk.check(operator, "operate-registered")

        await operator.goto(f"{url}/audit")
        await expect(operator.locator(".chain-ok")).to_contain_text("Verified")
        await walk.check(operator, "audit")
        await operator.locator("#checkpoint").set_input_files(
            {"name": "old.txt", "mimeType": "text/plain", "buffer": b"not a checkpoint\n"}
        )
        await operator.get_by_role("button", name="Check consistency").click()
        await expect(operator.locator(".consistency")).to_contain_text("No:")
        await walk.check(operator, "audit-consistency-refused")
        await operator.goto(f"{url}/audit/inclusion?sequence=1")
        await expect(operator.locator(".inclusion")).to_contain_text("Yes")
        await walk.check(operator, "audit-inclusion")

    saved = await asyncio.to_thread(lambda: sorted(p.stem for p in walk.screens.glob("*.png")))
    assert set(walk.names) <= set(saved)
    assert not walk.found, "\n".join(
        f"{page}: {problem}" for page, problems in walk.found.items() for problem in problems
    )

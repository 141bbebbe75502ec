"""Blinding in the browser: no other reviewer's identity or answer, and nothing of the
system's verdict, appears in any reviewer page's HTML or in any response it fetches.

bob answers first, through gRPC as himself: he cannot decide one case, finds another not
evaluable (each with a reason no one else could write), and labels a third. Then alice
works through the same three cases in the console, in a real Chromium, and opens every
page of the console's menu. Every response body the page receives (documents, scripts,
styles, redirects' targets) and every page's rendered HTML is recorded; none holds bob's
reviewer id, his reasons, the outcome names of his answers, a case's local verdict or
lineage, or the words "System verdict". A label is one of the candidate values, which every
reviewer rightly sees, so bob's label is checked by its absence as an answer: no review,
reviewer or outcome of his appears anywhere. The console's dev sign-in offers alice only,
so no page lists bob as a name to sign in as.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.async_api import Browser, Error, Page, Response, expect

from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import gold_pb2
from tests.support.browser import console_for, launch
from tests.support.secure import SecureStack, secure_stack

TIMEOUT = 20.0
CANDIDATES = ("blue-cable", "green-cable")
# bob's answers: (outcome, label, reason), one case each.
BOB_ANSWERS = (
    (adj.REVIEW_OUTCOME_UNRESOLVED, "", "bob-reason-Zq81: the vendor sheet contradicts itself"),
    (adj.REVIEW_OUTCOME_NOT_EVALUABLE, "", "bob-reason-Wk42: the predicate is ill-posed"),
    (adj.REVIEW_OUTCOME_LABEL, "green-cable", ""),
)
VERDICTS = ("verdict-Hx7-first", "verdict-Hx7-second", "verdict-Hx7-third")
LINEAGE = ("lineage-origin-Pv3", "lineage-ref-Pv3")
# bob's id as a word of its own (a random token could hold the letters inside it).
BOB = re.compile(r"(?<![A-Za-z0-9_-])bob(?![A-Za-z0-9_-])")
NEVER = (
    *(reason for _, _, reason in BOB_ANSWERS if reason),
    *VERDICTS,
    *LINEAGE,
    "System verdict",
    "UNRESOLVED",
    "NOT_EVALUABLE",
    "REVIEW_OUTCOME",
    "localVerdict",
    "local_verdict",
)


@dataclass
class Recorder:
    """Every response the page received, its body once read, and each page's HTML."""

    pending: list[Response] = field(default_factory=list)
    bodies: dict[str, list[str]] = field(default_factory=dict)

    def attach(self, page: Page) -> Page:
        page.on("response", lambda answer: self.pending.append(answer))
        return page

    async def take(self, page: Page) -> None:
        """Read the bodies received so far, and the page's HTML as it is now."""
        while self.pending:
            answer = self.pending.pop(0)
            try:
                body = (await answer.body()).decode("utf-8", errors="replace")
            except Error:  # a redirect has no body: its target is recorded as its own response
                body = ""
            self.bodies.setdefault(answer.url, []).append(body + str(answer.headers))
        self.bodies.setdefault(f"html of {page.url}", []).append(await page.content())

    def leaks(self) -> list[tuple[str, str]]:
        found = []
        for url, texts in self.bodies.items():
            for text in texts:
                found += [(url, secret) for secret in NEVER if secret in text]
                found += [(url, f"bob at {m.start()}") for m in BOB.finditer(text)]
        return found


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async for found in launch():
        yield found


async def seed(stack: SecureStack) -> list[str]:
    """alice and bob registered; three acme cases, each answered by bob."""
    async with stack.channel("adjudication") as channel:
        stub = adj_grpc.AdjudicationServiceStub(channel)
        for name in ("alice", "bob"):
            await stub.RegisterReviewer(
                adj.RegisterReviewerRequest(
                    request_id=f"register-{name}",
                    reviewer=adj.Reviewer(reviewer_id=name, kind=gold_pb2.REVIEWER_KIND_HUMAN),
                ),
                metadata=stack.auth("operator"),
                timeout=TIMEOUT,
            )
        made = []
        for verdict, (outcome, label, reason) in zip(VERDICTS, BOB_ANSWERS, strict=True):
            case = adj.Case(
                tenant="acme",
                subject="switch-42",
                predicate="uplink.cable",
                evidence_refs=["rack-photo"],
                context="which cable is plugged into the uplink port",
                lineage=adj.CaseLineage(origin=LINEAGE[0], origin_ref=LINEAGE[1]),
            )
            for value in CANDIDATES:
                case.candidate_values.add().string_value = value
            case.local_verdict.string_value = verdict
            reply = await stub.EnqueueCase(
                adj.EnqueueCaseRequest(request_id=f"case-{verdict}", case=case),
                metadata=stack.auth("operator"),
                timeout=TIMEOUT,
            )
            answer = adj.SubmitReviewRequest(
                request_id=f"bob-{verdict}",
                case_id=reply.case.case_id,
                reviewer_id="bob",
                outcome=outcome,
                reason=reason,
            )
            if label:
                answer.label.string_value = label
            await stub.SubmitReview(answer, metadata=stack.auth("bob"), timeout=TIMEOUT)
            made.append(str(reply.case.case_id))
        return made


async def stored(stack: SecureStack, case_id: str) -> adj.GetCaseResponse:
    """The case as the operator reads it: the verdict and every review."""
    async with stack.channel("adjudication") as channel:
        reply: adj.GetCaseResponse = await adj_grpc.AdjudicationServiceStub(channel).GetCase(
            adj.GetCaseRequest(case_id=case_id),
            metadata=stack.auth("operator"),
            timeout=TIMEOUT,
        )
        return reply


def alice_only(stack: SecureStack, directory: Path) -> Path:
    """A credentials folder for the console's dev sign-in holding alice's token only."""
    (directory / "tokens").mkdir(parents=True)
    shutil.copy(stack.creds.token_path("alice"), directory / "tokens" / "alice.jwt")
    return directory


async def test_no_reviewer_page_shows_another_reviewers_answer_or_the_verdict(
    tmp_path: Path, browser: Browser
) -> None:
    async with secure_stack(tmp_path) as stack:
        cases = await seed(stack)
        dev = alice_only(stack, tmp_path / "alice-only")
        async with console_for(stack, dev_credentials=dev) as url:
            recorder = Recorder()
            page = recorder.attach(await browser.new_page())
            await page.goto(f"{url}/review")
            await expect(page).to_have_url(f"{url}/signin?next=/review")
            await recorder.take(page)
            await page.get_by_role("button", name="Sign in as alice").click()
            await expect(page.get_by_text("3 cases waiting")).to_be_visible()
            await recorder.take(page)
            await page.get_by_role("link", name="Start reviewing").click()
            seen = []
            for index in range(len(cases)):
                await expect(page.locator("#review-form")).to_be_visible()
                seen.append(page.url.rsplit("/", 1)[1])
                await expect(page.locator("code.value")).to_have_text(
                    [f'"{v}"' for v in CANDIDATES]
                )
                await recorder.take(page)
                await page.wait_for_load_state("domcontentloaded")  # its script has run
                key = str(index % 2 + 1)
                await page.keyboard.press(key)
                await expect(page.locator(f"input[data-key='{key}']")).to_be_checked()
                await page.keyboard.press("Enter")
                await expect(page).not_to_have_url(f"{url}/review/{seen[-1]}")
            await expect(page.get_by_text("Nothing is waiting for your review")).to_be_visible()
            await recorder.take(page)
            assert sorted(seen) == sorted(cases)
            for path in ("/", "/adjudicate", "/approvals", "/operate", "/audit"):
                await page.goto(f"{url}{path}")
                await expect(page.locator("h1")).to_be_visible()
                await recorder.take(page)
            await page.goto(f"{url}/review/{cases[0]}")  # answered: what does it say now?
            await expect(page.locator("h1")).to_be_visible()
            await page.wait_for_load_state("networkidle")
            await recorder.take(page)
            # The recording holds what the pages showed: the script, the candidates, alice.
            everything = "".join(t for texts in recorder.bodies.values() for t in texts)
            assert "review-form" in everything
            assert "CSS.escape" in everything
            assert all(f'"{v}"' in everything for v in CANDIDATES)
            assert "Signed in as <strong>alice</strong>" in everything
            assert recorder.leaks() == []
        # What must not leak was there to leak: the verdicts and bob's answers are stored.
        for case_id, verdict, (outcome, label, reason) in zip(
            cases, VERDICTS, BOB_ANSWERS, strict=True
        ):
            full = await stored(stack, case_id)
            assert full.case.local_verdict.string_value == verdict
            (bobs,) = [r for r in full.reviews if r.reviewer_id == "bob"]
            assert (bobs.outcome, bobs.label.string_value, bobs.reason) == (outcome, label, reason)

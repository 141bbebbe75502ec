"""Review work as teams run it, through the console in a real Chromium against the real
services: a reviewer's rationale, amending and withdrawing a review given in this
sign-in, the adjudicator reading each rationale and deciding with a reason, hostile
rationales shown as text, and the operator's case list and assignments.

One stack, console and browser serve the whole module; each test makes its own cases
(the list test its own predicate), so the tests do not see each other's work. The
reviewer's pages are used with script off: everything works as plain HTML forms. Each
new or changed page is checked with axe-core (no serious or critical violation), at
320 pixels, for its skip link, and photographed (``test_console_accessibility.Walk``).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from assay.console.pages import case_work
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import gold_pb2
from tests.browser.test_console_accessibility import VIEWPORT, Walk, screens_folder
from tests.browser.test_console_hostile_content import (
    ANSI,
    BIDI,
    BREAKOUT,
    MARKUP,
    SCRIPT,
    ZERO_WIDTH,
    Watch,
)
from tests.service.adjudication_support import case_message, rid
from tests.support.browser import console_for, launch
from tests.support.secure import SecureStack, secure_stack

pytestmark = pytest.mark.asyncio(loop_scope="module")

TIMEOUT = 20.0
# A rationale written over two lines: the line break must survive the form and the page.
TWO_LINES = "the doc says keyed\nbut the code reads none"
HOSTILE_RATIONALE = f"{SCRIPT}{BREAKOUT}\n{MARKUP}{BIDI}{ZERO_WIDTH}"
HOSTILE_DECISION = f"{BREAKOUT}{SCRIPT}\n{BIDI}"


@dataclass(frozen=True)
class Served:
    stack: SecureStack
    url: str
    browser: Browser
    screens: Path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    """The secure stack with alice, bob and carol registered as people, the console, and
    one Chromium."""
    directory = tmp_path_factory.mktemp("review-work")
    async with secure_stack(directory) as stack, console_for(stack) as url:
        async with stack.channel("adjudication") as channel:
            stub = adj_grpc.AdjudicationServiceStub(channel)
            for name in ("alice", "bob", "carol"):
                await stub.RegisterReviewer(
                    adj.RegisterReviewerRequest(
                        request_id=rid(),
                        reviewer=adj.Reviewer(
                            reviewer_id=name,
                            kind=gold_pb2.REVIEWER_KIND_HUMAN,
                            attested_by="operator",
                        ),
                    ),
                    metadata=stack.auth("operator"),
                    timeout=TIMEOUT,
                )
        async for browser in launch():
            yield Served(stack, url, browser, screens_folder(directory))


async def enqueue(served: Served, predicate: str = "idempotency.mode") -> str:
    case = case_message(tenant="acme")
    case.predicate = predicate
    async with served.stack.channel("adjudication") as channel:
        made = await adj_grpc.AdjudicationServiceStub(channel).EnqueueCase(
            adj.EnqueueCaseRequest(request_id=rid(), case=case),
            metadata=served.stack.auth("operator"),
            timeout=TIMEOUT,
        )
    return str(made.case.case_id)


async def answer(served: Served, case_id: str, name: str, label: str, rationale: str) -> None:
    """``name`` answers ``label`` through gRPC, as themselves."""
    request = adj.SubmitReviewRequest(
        request_id=rid(),
        case_id=case_id,
        reviewer_id=name,
        outcome=adj.REVIEW_OUTCOME_LABEL,
        rationale=rationale,
    )
    request.label.string_value = label
    async with served.stack.channel("adjudication") as channel:
        await adj_grpc.AdjudicationServiceStub(channel).SubmitReview(
            request, metadata=served.stack.auth(name), timeout=TIMEOUT
        )


async def operator_view(served: Served, case_id: str) -> adj.GetCaseResponse:
    async with served.stack.channel("adjudication") as channel:
        reply: adj.GetCaseResponse = await adj_grpc.AdjudicationServiceStub(channel).GetCase(
            adj.GetCaseRequest(case_id=case_id),
            metadata=served.stack.auth("operator"),
            timeout=TIMEOUT,
        )
    return reply


async def person(served: Served, name: str, start: str, script: bool = True) -> Page:
    """A browser context of ``name``'s own (script on or off), signed in at ``start``."""
    context = await served.browser.new_context(viewport=VIEWPORT, java_script_enabled=script)
    page = await context.new_page()
    await page.goto(f"{served.url}{start}")
    await page.get_by_role("button", name=f"Sign in as {name}", exact=True).click()
    await expect(page).to_have_url(f"{served.url}{start}")
    return page


def passed(walk: Walk) -> None:
    assert not walk.found, "\n".join(
        f"{page}: {problem}" for page, problems in walk.found.items() for problem in problems
    )


class TestTheReviewer:
    async def test_a_rationale_an_amendment_and_a_withdrawal_without_script(
        self, served: Served
    ) -> None:
        """alice answers with a two-line rationale, reads her review back from the notice,
        amends it (the form prefilled), then withdraws it after the confirmation page: the
        case is back in her queue, and GetCase holds all three records. (axe needs script:
        these pages are checked in the assignment test.)"""
        case_id = await enqueue(served)
        url = served.url
        alice = await person(served, "alice", f"/review/{case_id}", script=False)
        await expect(
            alice.get_by_label("Rationale (optional, for the adjudicator)")
        ).to_be_visible()
        await alice.get_by_label('"key"').check()
        await alice.get_by_label("Rationale (optional, for the adjudicator)").fill(TWO_LINES)
        await alice.get_by_role("button", name="Submit and go to the next case").click()

        await alice.get_by_role("link", name="See, amend or withdraw it").click()
        await expect(alice).to_have_url(f"{url}/review/{case_id}/mine")
        mine = alice.locator(".own-review")
        await expect(mine.locator(".outcome")).to_contain_text('"key"')
        assert await mine.locator(".rationale").inner_text() == TWO_LINES
        await expect(alice.get_by_label('"key"')).to_be_checked()
        await expect(alice.get_by_label("Rationale (optional, for the adjudicator)")).to_have_value(
            TWO_LINES
        )

        await alice.get_by_label('"none"').check()
        await alice.get_by_label("Rationale (optional, for the adjudicator)").fill(
            "none, on reading"
        )
        await alice.get_by_role("button", name="Save the amended review").click()
        await expect(alice.get_by_role("status")).to_contain_text("Your amended review")
        await expect(mine.locator(".outcome")).to_contain_text('"none"')
        await expect(mine.locator(".rationale")).to_have_text("none, on reading")

        await alice.get_by_role("link", name="Withdraw my review…").click()
        await expect(alice.get_by_role("heading", name="Withdraw my review?")).to_be_visible()
        await alice.get_by_role("button", name="Yes, withdraw my review").click()
        await expect(alice).to_have_url(f"{url}/review?withdrawn=1")
        await expect(alice.get_by_role("status")).to_contain_text("back in your queue")
        await expect(alice.locator(f'a[href="/review/{case_id}"]')).to_have_count(1)

        records = (await operator_view(served, case_id)).reviews
        assert [r.outcome for r in records] == [
            adj.REVIEW_OUTCOME_LABEL,
            adj.REVIEW_OUTCOME_LABEL,
            adj.REVIEW_OUTCOME_WITHDRAWN,
        ]
        assert [r.superseded for r in records] == [True, True, False]
        assert records[0].rationale == TWO_LINES
        assert records[1].supersedes_review_id == records[0].review_id
        assert records[2].supersedes_review_id == records[1].review_id

    async def test_a_review_revised_elsewhere_or_decided_is_not_offered_again(
        self, served: Served
    ) -> None:
        """alice amends one review with another tool after giving it here: the console's
        amendment is refused in words and the review is no longer offered. Another's round
        is resolved: its page says so and offers neither amending nor withdrawing."""
        revised, decided = await enqueue(served), await enqueue(served)
        alice = await person(served, "alice", "/review")
        for case_id in (revised, decided):
            await alice.goto(f"{served.url}/review/{case_id}")
            await alice.get_by_label('"key"').check()
            await alice.get_by_role("button", name="Submit and go to the next case").click()
            await expect(
                alice.get_by_role("link", name="See, amend or withdraw it")
            ).to_be_visible()
        (first,) = (await operator_view(served, revised)).reviews
        elsewhere = adj.AmendReviewRequest(
            request_id=rid(), review_id=first.review_id, outcome=adj.REVIEW_OUTCOME_LABEL
        )
        elsewhere.label.string_value = "none"
        async with served.stack.channel("adjudication") as channel:
            stub = adj_grpc.AdjudicationServiceStub(channel)
            await stub.AmendReview(elsewhere, metadata=served.stack.auth("alice"), timeout=TIMEOUT)
            await answer(served, decided, "bob", "none", "")
            decision = adj.ResolveCaseRequest(
                request_id=rid(),
                case_id=decided,
                basis=gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION,
                adjudicator_reviewer_id="carol",
            )
            decision.label.string_value = "key"
            await stub.ResolveCase(decision, metadata=served.stack.auth("carol"), timeout=TIMEOUT)

        await alice.goto(f"{served.url}/review/{revised}/mine")
        await alice.get_by_role("button", name="Save the amended review").click()
        await expect(alice.get_by_role("heading", level=1)).to_contain_text(
            "amended or withdrawn since"
        )
        await alice.goto(f"{served.url}/review/{revised}/mine")
        await expect(alice.get_by_role("heading", level=1)).to_contain_text(
            "no review of this case"
        )
        await alice.goto(f"{served.url}/review/{decided}/mine")
        await expect(alice.locator(".decided")).to_contain_text("The round is decided (resolved)")
        await expect(alice.locator("#review-form")).to_have_count(0)
        await expect(alice.get_by_role("link", name="Withdraw my review…")).to_have_count(0)

    async def test_a_review_from_another_sign_in_is_not_offered(self, served: Served) -> None:
        """bob answered through gRPC, not in this sign-in: his review page says where to
        amend it instead, and shows nothing of it."""
        case_id = await enqueue(served)
        await answer(served, case_id, "bob", "key", "bob's own note")
        bob = await person(served, "bob", "/review")
        await bob.goto(f"{served.url}/review/{case_id}/mine")
        await expect(bob.get_by_role("heading")).to_contain_text("no review of this case")
        assert "bob's own note" not in await bob.content()


class TestTheAdjudicator:
    async def test_both_rationales_and_a_decision_with_its_reason(self, served: Served) -> None:
        """carol reads alice's and bob's rationales beside their answers (line breaks kept)
        and how many reviews the round needed, and decides with a reason GetCase shows (a
        reason the service refuses is named beside its field first, the choice kept)."""
        walk = Walk(served.screens)
        case_id = await enqueue(served)
        await answer(served, case_id, "alice", "key", TWO_LINES)
        await answer(served, case_id, "bob", "none", "the code path never sets a key")
        carol = await person(served, "carol", f"/adjudicate/{case_id}")
        reviews = carol.locator("tr.review")
        await expect(reviews).to_have_count(2)
        assert await reviews.nth(0).locator(".rationale").inner_text() == TWO_LINES
        await expect(reviews.nth(1).locator(".rationale")).to_have_text(
            "the code path never sets a key"
        )
        await expect(carol.locator(".required")).to_have_text("2")
        await walk.check(carol, "adjudicate-case")
        await carol.get_by_label('The label is "none"').check()
        await carol.get_by_label("Reason for the decision").fill(f"{ANSI} colours")
        await carol.get_by_role("button", name="Record the decision").click()
        await expect(carol.locator("#rationale-problem")).to_contain_text("control characters")
        await expect(carol.get_by_label('The label is "none"')).to_be_checked()
        await expect(carol.get_by_label("Reason for the decision")).to_have_value(f"{ANSI} colours")
        await carol.get_by_label("Reason for the decision").fill("the code wins\nover the doc")
        await carol.get_by_role("button", name="Record the decision").click()
        await expect(carol.get_by_text("Your decision is recorded")).to_be_visible()
        (resolution,) = (await operator_view(served, case_id)).resolutions
        assert resolution.rationale == "the code wins\nover the doc"
        assert resolution.label.string_value == "none"
        passed(walk)


class TestHostileRationales:
    async def test_rationales_and_a_decisions_reason_are_shown_as_text(
        self, served: Served
    ) -> None:
        """alice's rationale holds script, markup, an attribute breakout, bidi controls and
        zero-width characters; an ANSI escape is refused beside the field (the text she
        typed kept, as text); bob's and carol's are hostile too. Nothing runs or is
        injected on alice's, carol's or the operator's pages."""
        case_id = await enqueue(served)
        watch = Watch(served.url)
        alice = watch.attach(await person(served, "alice", f"/review/{case_id}"))
        rationale = alice.get_by_label("Rationale (optional, for the adjudicator)")
        await alice.get_by_label('"key"').check()
        await rationale.fill(f"{HOSTILE_RATIONALE}{ANSI}")
        await alice.get_by_role("button", name="Submit and go to the next case").click()
        await expect(alice.locator("#rationale-problem")).to_contain_text("control characters")
        await expect(rationale).to_have_attribute("aria-invalid", "true")
        await expect(rationale).to_have_value(f"{HOSTILE_RATIONALE}{ANSI}")
        await watch.check(alice)
        await alice.get_by_label('"key"').check()
        await rationale.fill(HOSTILE_RATIONALE)
        await alice.get_by_role("button", name="Submit and go to the next case").click()
        await alice.get_by_role("link", name="See, amend or withdraw it").click()
        await watch.check(alice, HOSTILE_RATIONALE)

        await answer(served, case_id, "bob", "none", HOSTILE_RATIONALE[::-1])
        carol = watch.attach(await person(served, "carol", f"/adjudicate/{case_id}"))
        await expect(carol.locator("tr.review")).to_have_count(2)
        await watch.check(carol, HOSTILE_RATIONALE, HOSTILE_RATIONALE[::-1])
        await carol.get_by_label('The label is "key"').check()
        await carol.get_by_label("Reason for the decision").fill(HOSTILE_DECISION)
        await carol.get_by_role("button", name="Record the decision").click()
        await expect(carol.get_by_text("Your decision is recorded")).to_be_visible()

        operator = watch.attach(await person(served, "operator", f"/operate/cases/{case_id}"))
        await expect(operator.locator("tr.resolution")).to_have_count(1)
        await watch.check(operator, HOSTILE_RATIONALE, HOSTILE_RATIONALE[::-1], HOSTILE_DECISION)


class TestTheOperator:
    async def test_the_case_list_filters_by_state_and_pages(
        self, served: Served, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Three cases of a predicate of their own: filtered to DISAGREED, one; to any
        state, all three, two to a page with a next-page link that keeps the filters;
        newest first, the reverse. Two ticked cases shared round robin between bob and
        carol (nothing ticked is refused first)."""
        walk = Walk(served.screens)
        predicate = f"list.{rid()[:8]}"
        made = [await enqueue(served, predicate) for _ in range(3)]
        await answer(served, made[0], "alice", "key", "")
        await answer(served, made[0], "bob", "none", "")
        await answer(served, made[1], "alice", "key", "")
        operator = await person(served, "operator", "/operate")
        await operator.get_by_role("link", name="Find cases").click()
        await operator.get_by_label("Predicate").fill(predicate)
        await operator.get_by_label("disagreed").check()
        await operator.get_by_role("button", name="Show the cases").click()
        rows = operator.locator("tr.case-row")
        await expect(rows).to_have_count(1)
        await expect(rows.nth(0)).to_contain_text(made[0])
        await expect(rows.nth(0).locator(".state")).to_have_text("disagreed")
        await walk.check(operator, "operate-cases")

        monkeypatch.setattr(case_work, "PAGE", 2)
        await operator.get_by_label("disagreed").uncheck()
        await operator.get_by_role("button", name="Show the cases").click()
        await expect(rows).to_have_count(2)
        await expect(rows.nth(0)).to_contain_text(made[0])
        await expect(rows.nth(1)).to_contain_text(made[1])
        await operator.get_by_role("link", name="Next page").click()
        await expect(operator).to_have_url(re.compile(r".*[?&]page="))
        await expect(rows).to_have_count(1)
        await expect(rows.nth(0)).to_contain_text(made[2])
        await expect(operator.get_by_label("Predicate")).to_have_value(predicate)
        await operator.get_by_label("Newest first").check()
        await operator.get_by_role("button", name="Show the cases").click()
        await expect(rows.nth(0)).to_contain_text(made[2])
        await expect(rows.nth(1)).to_contain_text(made[1])

        await operator.get_by_label("Created since (UTC)").fill("2000-01-01T00:00")
        await operator.get_by_role("button", name="Show the cases").click()
        await expect(rows).to_have_count(2)

        await operator.get_by_label("Reviewer ids").fill("bob carol")
        await operator.get_by_role("button", name="Assign", exact=True).click()
        await expect(operator.get_by_role("alert")).to_have_text("Tick the cases to assign.")
        await operator.get_by_label(f"Assign {made[2]}").check()
        await operator.get_by_label(f"Assign {made[1]}").check()
        await operator.get_by_label("Round robin: the next of them in turn").check()
        await operator.get_by_label("Reviewers per case").fill("1")
        await operator.get_by_role("button", name="Assign", exact=True).click()
        await expect(operator.get_by_role("status")).to_have_text("Assigned 2 cases.")
        await expect(rows.nth(0).locator("td").nth(7)).to_have_text("bob")
        await expect(rows.nth(1).locator("td").nth(7)).to_have_text("carol")
        passed(walk)

    async def test_the_case_page_assigns_unassigns_and_shows_every_record(
        self, served: Served
    ) -> None:
        """The operator assigns alice and bob (each), unassigns bob and assigns him again;
        a reviewer nobody registered is refused beside the field. alice's queue marks the
        case as hers and lists it first. The case page shows the reviews each round
        needs, alice's amended record marked superseded with both rationales, and the
        round's agreement."""
        walk = Walk(served.screens)
        predicate = f"assign.{rid()[:8]}"
        case_id = await enqueue(served, predicate)
        operator = await person(served, "operator", f"/operate/cases/{case_id}")
        await expect(operator.locator(".required")).to_have_text("2")
        await operator.get_by_label("Reviewer ids").fill("alice, bob")
        await operator.get_by_label("Each: every reviewer named").check()
        await operator.get_by_role("button", name="Assign", exact=True).click()
        await expect(operator.get_by_role("status")).to_have_text("Assigned.")
        await expect(operator.locator("li.assignee")).to_have_count(2)
        await walk.check(operator, "operate-case-assigned")
        await operator.get_by_role("button", name="Unassign bob").click()
        await expect(operator.get_by_role("status")).to_have_text("Unassigned bob.")
        await expect(operator.locator("li.assignee .value")).to_have_text(["alice"])
        await operator.get_by_label("Reviewer ids").fill("bob")
        await operator.get_by_role("button", name="Assign", exact=True).click()
        await expect(operator.locator("li.assignee .value")).to_have_text(["alice", "bob"])
        await operator.goto(f"{served.url}/operate/cases?assigned=bob&predicate={predicate}")
        await expect(operator.locator("tr.case-row")).to_have_count(1)
        await expect(operator.locator("tr.case-row")).to_contain_text(case_id)
        await operator.goto(f"{served.url}/operate/cases/{case_id}")

        await operator.get_by_label("Reviewer ids").fill("nobody-registered")
        await operator.get_by_role("button", name="Assign", exact=True).click()
        await expect(operator.locator("#reviewer-ids-problem")).to_contain_text("nobody-registered")

        alice = await person(served, "alice", "/review")
        first = alice.locator("ol.queue li").nth(0)
        await expect(first).to_contain_text("assigned to you")
        await expect(first.locator("a")).to_have_attribute("href", f"/review/{case_id}")
        await walk.check(alice, "review-queue-assigned")
        await first.locator("a").click()
        await walk.check(alice, "review-case")
        await alice.get_by_label('"key"').check()
        await alice.get_by_label("Rationale (optional, for the adjudicator)").fill("first look")
        await alice.get_by_role("button", name="Submit and go to the next case").click()
        await alice.get_by_role("link", name="See, amend or withdraw it").click()
        await alice.get_by_label("Rationale (optional, for the adjudicator)").fill("second look")
        await alice.get_by_role("button", name="Save the amended review").click()
        await expect(alice.get_by_role("status")).to_contain_text("Your amended review")
        await walk.check(alice, "review-mine")
        await alice.get_by_role("link", name="Withdraw my review…").click()
        await expect(alice.get_by_role("heading", name="Withdraw my review?")).to_be_visible()
        await walk.check(alice, "review-withdraw")
        await alice.get_by_role("link", name="No, keep it").click()
        await alice.goto(f"{served.url}/review")
        await expect(alice.locator(".own-reviews li")).to_contain_text(['"key"'])
        await walk.check(alice, "review-queue-own")
        await answer(served, case_id, "bob", "key", "agrees")
        # Blinded still: alice's own page says the round awaits a resolution, not that bob
        # agreed, and shows nothing of his review.
        await alice.goto(f"{served.url}/review/{case_id}/mine")
        await expect(alice.get_by_text("awaiting resolution")).to_be_visible()
        assert "agrees" not in await alice.content()
        assert "bob" not in await alice.locator("main").inner_text()

        await operator.goto(f"{served.url}/operate/cases/{case_id}")
        records = operator.locator("tr.review-record")
        await expect(records).to_have_count(3)
        await expect(records.nth(0)).to_contain_text("superseded")
        await expect(records.nth(0).locator(".rationale")).to_have_text("first look")
        await expect(records.nth(1).locator(".rationale")).to_have_text("second look")
        await expect(records.nth(1)).not_to_contain_text("superseded")
        await expect(operator.locator("tr.round-agreement")).to_contain_text("2 (100%)")
        await walk.check(operator, "operate-case-records")
        passed(walk)

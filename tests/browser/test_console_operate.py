"""An operator works in the console, in a real Chromium against the real services:
freezes a case carol resolved, enqueues cases from uploaded JSONL and CSV files (all or
nothing, every rejected row named with its line), registers a reviewer with their
attestation, and reads a tenant's agreement with its honesty rules and SVG charts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from google.protobuf import json_format
from playwright.async_api import Browser, Page, expect

from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import gold_pb2
from tests.browser.test_console_adjudicate import HIDDEN_VERDICT, seed_disagreement
from tests.service.adjudication_support import case_message, rid
from tests.support.browser import console_for, launch
from tests.support.secure import SecureStack, secure_stack

TIMEOUT = 20.0


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async for found in launch():
        yield found


def case_json(**changes: object) -> str:
    """One acme case as a JSONL line, with ``changes`` to its proto JSON."""
    case = json.loads(json_format.MessageToJson(case_message(tenant="acme")))
    case.update(changes)
    return json.dumps(case)


async def operator_page(browser: Browser, url: str) -> Page:
    page = await browser.new_page()
    await page.goto(f"{url}/operate")
    await page.get_by_role("button", name="Sign in as operator").click()
    await expect(page.get_by_role("heading", name="Operate", exact=True)).to_be_visible()
    return page


async def upload(page: Page, name: str, text: str) -> None:
    await page.locator("#file").set_input_files(
        {"name": name, "mimeType": "text/plain", "buffer": text.encode()}
    )
    await page.get_by_role("button", name="Enqueue all or nothing").click()


async def acme_cases(stack: SecureStack) -> int:
    async with stack.channel("adjudication") as channel:
        reply = await adj_grpc.AdjudicationServiceStub(channel).ListQueue(
            adj.ListQueueRequest(reviewer_id="alice", page_size=1000),
            metadata=stack.auth("operator"),
            timeout=TIMEOUT,
        )
        return len(reply.cases)


async def resolve_as_carol(stack: SecureStack, case_id: str) -> None:
    async with stack.channel("adjudication") as channel:
        decision = adj.ResolveCaseRequest(
            request_id=rid(),
            case_id=case_id,
            basis=gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION,
            adjudicator_reviewer_id="carol",
        )
        decision.label.string_value = "none"
        await adj_grpc.AdjudicationServiceStub(channel).ResolveCase(
            decision, metadata=stack.auth("carol"), timeout=TIMEOUT
        )


async def reviewed_pairs(stack: SecureStack, answers: list[tuple[str, str]]) -> None:
    """One acme case per pair of answers, alice giving the first and bob the second."""
    async with stack.channel("adjudication") as channel:
        stub = adj_grpc.AdjudicationServiceStub(channel)
        for first, second in answers:
            made = await stub.EnqueueCase(
                adj.EnqueueCaseRequest(request_id=rid(), case=case_message(tenant="acme")),
                metadata=stack.auth("operator"),
                timeout=TIMEOUT,
            )
            for name, label in (("alice", first), ("bob", second)):
                answer = adj.SubmitReviewRequest(
                    request_id=rid(),
                    case_id=made.case.case_id,
                    reviewer_id=name,
                    outcome=adj.REVIEW_OUTCOME_LABEL,
                )
                answer.label.string_value = label
                await stub.SubmitReview(answer, metadata=stack.auth(name), timeout=TIMEOUT)


class TestOperatorPages:
    async def test_the_operator_freezes_a_resolved_case(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """The full view (the system's verdict included), the freeze, the revision, and how
        the frozen case reopens."""
        async with secure_stack(tmp_path) as stack, console_for(stack) as url:
            case_id = await seed_disagreement(stack)
            await resolve_as_carol(stack, case_id)
            page = await operator_page(browser, url)
            await page.get_by_label("Case id").fill(case_id)
            await page.get_by_role("button", name="Show the case").click()
            await expect(page).to_have_url(f"{url}/operate/cases/{case_id}")
            await expect(page.locator(".state")).to_contain_text("resolved (round 1)")
            await expect(page.get_by_text(HIDDEN_VERDICT)).to_be_visible()
            await page.get_by_role("button", name="Freeze round 1 into a gold label").click()
            await expect(page.get_by_text("Frozen into a gold-label revision")).to_be_visible()
            await expect(page.locator(".state")).to_contain_text("frozen")
            await expect(page.locator("tr.revision")).to_have_count(1)
            await expect(page.locator("tr.revision")).to_contain_text("adjudicator decision")
            await expect(page.locator(".reopen")).to_contain_text("round 2")

    async def test_an_upload_is_stored_whole_or_every_bad_row_is_named(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """Unreadable rows named by the console, invalid ones by the service's positions,
        nothing stored until the file is right; then a JSONL and a CSV file stored whole."""
        async with secure_stack(tmp_path) as stack, console_for(stack) as url:
            await seed_disagreement(stack)
            before = await acme_cases(stack)
            page = await operator_page(browser, url)
            unreadable = "\n".join([case_json(), "not json", case_json(bogus=1)])
            await upload(page, "cases.jsonl", unreadable)
            rows = page.locator("tr.rejected-row")
            await expect(rows).to_have_count(2)
            await expect(rows.nth(0)).to_contain_text("2")
            await expect(rows.nth(0)).to_contain_text("not JSON")
            await expect(rows.nth(1)).to_contain_text("bogus")
            invalid = "\n".join(
                [
                    case_json(),
                    case_json(candidateValues=["a", "a"]),
                    case_json(),
                    case_json(subject=""),
                ]
            )
            await upload(page, "cases.jsonl", invalid)
            await expect(page.get_by_text("Nothing from cases.jsonl was stored")).to_be_visible()
            await expect(page.locator(".rejected")).to_contain_text("The service said")
            text = await page.locator(".rejected").inner_text()
            assert "candidate_values" in text
            assert "subject" in text
            named_rows = {
                (await row.locator("td").nth(0).inner_text())
                for row in await page.locator("tr.rejected-row").all()
            }
            assert named_rows == {"2", "4"}
            assert await acme_cases(stack) == before
            await upload(page, "cases.jsonl", "\n".join([case_json(), case_json()]))
            await expect(page.get_by_text("Stored 2 cases from cases.jsonl")).to_be_visible()
            csv_text = (
                "tenant,subject,predicate,candidate_values,local_verdict,origin\n"
                'acme,api:x,mode,"[""a"",""b""]","""a""",import\n'
            )
            await upload(page, "cases.csv", csv_text)
            await expect(page.get_by_text("Stored 1 case from cases.csv")).to_be_visible()
            assert await acme_cases(stack) == before + 3

    async def test_an_oversized_upload_is_refused_before_it_is_read(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """A file over the bound gets 413 and stores nothing."""
        async with secure_stack(tmp_path) as stack, console_for(stack) as url:
            await seed_disagreement(stack)
            page = await operator_page(browser, url)
            big = case_json() + "\n" + " " * (2 * 1024 * 1024)
            await upload(page, "big.jsonl", big)
            await expect(page.get_by_text("An upload may be at most")).to_be_visible()

    async def test_the_operator_registers_a_person_with_their_attestation(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """A person needs the operator to vouch; the registration records who did."""
        async with secure_stack(tmp_path) as stack, console_for(stack) as url:
            page = await operator_page(browser, url)
            await page.get_by_label("Reviewer id").fill("erin")
            await page.get_by_role("button", name="Register").click()
            await expect(page.get_by_text("vouch that they are one")).to_be_visible()
            await page.get_by_label("Reviewer id").fill("erin")
            await page.get_by_label("vouch that this reviewer is a person").check()
            await page.get_by_role("button", name="Register").click()
            await expect(page.get_by_role("status")).to_have_text("Registered erin.")
            row = page.locator("tr", has_text="erin")
            await expect(row).to_contain_text("human")
            await expect(row).to_contain_text("operator")

    async def test_agreement_is_honest_below_the_minimum_and_charted_above_it(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """One double-reviewed case: insufficient, in words. Twenty-one: numbers with
        intervals, a pair heatmap and per-category bars drawn as SVG."""
        async with secure_stack(tmp_path) as stack, console_for(stack) as url:
            await seed_disagreement(stack)
            page = await operator_page(browser, url)
            await page.get_by_label("Tenant", exact=True).fill("acme")
            await page.get_by_role("button", name="Show the agreement").click()
            await expect(page.locator(".pooled")).to_have_text(
                "insufficient: 1 of 20 double-reviewed cases"
            )
            await expect(page.locator("tr.pair")).to_contain_text("insufficient: 1 of 20")
            answers = [("key", "key")] * 12 + [("none", "none")] * 6 + [("key", "none")] * 2
            await reviewed_pairs(stack, answers)
            await page.reload()
            await expect(page.locator(".pooled")).to_contain_text("95% interval")
            await expect(page.locator(".alpha")).to_contain_text("95% interval")
            await expect(page.locator(".percent")).to_contain_text("95% interval")
            await expect(page.locator(".ac1")).to_contain_text("95% interval")
            await expect(page.locator(".ac2")).to_have_text(
                "undefined: some answers are not numbers to order"
            )
            await expect(page.locator(".warning")).to_contain_text("Test-fixture reviewers")
            await expect(page.locator("svg.heatmap g.cell rect")).to_have_count(2)
            await expect(page.locator("svg.bars g.bar rect")).to_have_count(2)
            await expect(page.locator("svg.bars line.interval")).to_have_count(2)

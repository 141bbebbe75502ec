"""The whole scenario through the console, in a real Chromium, every person signed in
through a real OpenID Connect provider (oidc-provider-mock, its own process, its own login
form), each in a browser context of their own.

The operator registers alice, bob, carol and globex's mallory as people, vouching for each
(so each is bound to their provider subject: alice's is ``ALICE``, which is not her reviewer
id, and only that subject acts as her), and enqueues a case from an uploaded file. alice and
bob review it and disagree; carol adjudicates; the operator freezes it; the auditor's export
download and ``ListGoldLabelRevisions`` both say HUMAN_ADJUDICATED. Then an executor run (an
asyncio task acting as the operator) waits on an approval for its REQUIRES_APPROVAL
candidate; dave approves it in the console and the run goes on to act and resolve. mallory
(globex) opens every page and sees nothing of acme: a page naming an acme id is the page a
made-up id gets.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import sys
import zipfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, BrowserContext, Page, expect

from assay.client import AsyncPlannerClient, AsyncResolverClient
from assay.client.approvals import AsyncApprovalClient
from assay.client.credentials import Credentials
from assay.executor.loop import Executor, Services
from assay.executor.model import (
    ApprovalOutcome,
    Outcome,
    ProbeSetup,
    RunReport,
    Settings,
    StopReason,
)
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import gold_pb2
from tests.browser.test_console_oidc import console, loopback_only, provider_form
from tests.browser.test_console_operate import case_json
from tests.service.test_executor_approvals import EVIDENCE, PREDICATE, RERUN, SUBJECT, TENANT
from tests.support.browser import launch
from tests.support.eventually import eventually_async
from tests.support.oidc import ALICE, OidcStack, Provider, oidc_provider, oidc_stack

TIMEOUT = 20.0
# Beyond the provider-trusting policy's operator, alice, bob and planner.
MORE_PEOPLE = """
[[principals]]
subject = "carol"
roles = ["adjudicator", "reviewer", "reader"]
tenants = ["acme"]

[[principals]]
subject = "dave"
roles = ["approver", "reader"]
tenants = ["acme"]

[[principals]]
subject = "mallory"
roles = ["reviewer", "reader"]
tenants = ["globex"]
"""


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async for found in launch():
        yield found


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with oidc_provider() as running:
        yield running


async def person(
    browser: Browser, url: str, provider: Provider, subject: str, start: str
) -> tuple[BrowserContext, Page]:
    """A browser context of ``subject``'s own, signed in through the provider's form."""
    context = await browser.new_context()
    page = await context.new_page()
    await page.route("**/*", loopback_only)
    await page.goto(f"{url}{start}")
    await page.get_by_role("link", name="Sign in with your organisation").click()
    await provider_form(page, provider, subject)
    await expect(page).to_have_url(f"{url}{start}")
    return context, page


async def register(page: Page, reviewer_id: str) -> None:
    await page.get_by_label("Reviewer id").fill(reviewer_id)
    await page.get_by_label("vouch that this reviewer is a person").check()
    await page.get_by_role("button", name="Register").click()
    await expect(page.get_by_role("status")).to_have_text(f"Registered {reviewer_id}.")


async def answer(page: Page, url: str, case_id: str, key: str) -> None:
    """Open the queue's first case (``case_id``), choose with ``key``, submit."""
    await expect(page.get_by_text("1 case waiting")).to_be_visible()
    await page.get_by_role("link", name="Start reviewing").click()
    await expect(page).to_have_url(re.compile(f".*/{case_id}$"))
    await page.wait_for_load_state("domcontentloaded")  # the keyboard's script has run
    await page.keyboard.press(key)
    await expect(page.locator(f"input[data-key='{key}']")).to_be_checked()
    await page.keyboard.press("Enter")


async def revisions(stack: OidcStack, case_id: str) -> list[gold_pb2.GoldLabelRevision]:
    async with stack.channel("adjudication") as channel:
        reply = await adj_grpc.AdjudicationServiceStub(channel).ListGoldLabelRevisions(
            adj.ListGoldLabelRevisionsRequest(case_id=case_id),
            metadata=stack.auth("operator"),
            timeout=TIMEOUT,
        )
        return list(reply.revisions)


@contextlib.asynccontextmanager
async def executor_run(
    stack: OidcStack, provider: Provider, workdir: Path
) -> AsyncIterator[tuple[asyncio.Task[RunReport], AsyncApprovalClient]]:
    """An executor run as the operator (its ID token from the provider) for acme with
    nothing granted, so its rerun candidate needs an approval; and the operator's client."""
    operator = Credentials(ca=stack.creds.ca, token=provider.id_token("operator"))
    targets = stack.targets
    async with (
        AsyncResolverClient(targets.resolver, timeout=10, credentials=operator) as resolver,
        AsyncPlannerClient(targets.planner, timeout=10, credentials=operator) as planner,
        AsyncApprovalClient(targets.adjudication, timeout=10, credentials=operator) as asks,
    ):
        setup = ProbeSetup(
            test_command=(sys.executable, "-c", "pass"), worktree=workdir, test_timeout=30
        )
        settings = Settings(SUBJECT, PREDICATE, tenant=TENANT, approval_wait=60, probes=setup)
        services = Services(resolver, planner, None, asks)
        task = asyncio.create_task(Executor(services, settings).run(EVIDENCE))
        try:
            yield task, asks
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task


async def download(page: Page, button: str) -> bytes:
    async with page.expect_download() as started:
        await page.get_by_role("button", name=button).click()
    saved = await (await started.value).path()
    return await asyncio.to_thread(Path(saved).read_bytes)


async def test_people_label_adjudicate_freeze_export_and_approve_in_the_console(
    tmp_path: Path, browser: Browser, provider: Provider
) -> None:
    async with (
        oidc_stack(tmp_path, provider, more_principals=MORE_PEOPLE) as stack,
        console(stack, provider, tmp_path) as url,
    ):
        contexts: list[BrowserContext] = []

        async def sign_in(subject: str, start: str) -> Page:
            context, page = await person(browser, url, provider, subject, start)
            contexts.append(context)
            return page

        # The operator vouches for four people (mallory is globex's) and enqueues a case.
        operator = await sign_in("operator", "/operate")
        for reviewer_id in ("alice", "bob", "carol", "mallory"):
            await register(operator, reviewer_id)
        await operator.locator("#file").set_input_files(
            {"name": "cases.jsonl", "mimeType": "text/plain", "buffer": case_json().encode()}
        )
        await operator.get_by_role("button", name="Enqueue all or nothing").click()
        await expect(operator.get_by_text("Stored 1 case from cases.jsonl")).to_be_visible()
        case_id = await operator.locator(".stored a").inner_text()

        # alice and bob, each in a context of their own, disagree.
        alice = await sign_in(ALICE, "/review")
        await expect(alice.get_by_text("Signed in as alice")).to_be_visible()
        bob = await sign_in("bob", "/review")
        await answer(alice, url, case_id, "1")
        await answer(bob, url, case_id, "2")
        for page in (alice, bob):
            await expect(page.get_by_text("Nothing is waiting for your review")).to_be_visible()

        # carol decides; the operator freezes.
        carol = await sign_in("carol", "/adjudicate")
        await expect(carol.get_by_text("1 case waiting for your decision")).to_be_visible()
        await carol.get_by_role("link", name="Start with the first").click()
        await expect(carol.locator("tr.review")).to_have_count(2)
        await carol.wait_for_load_state("domcontentloaded")
        await carol.keyboard.press("2")
        await expect(carol.locator("input[data-key='2']")).to_be_checked()
        await carol.keyboard.press("Enter")
        await expect(carol.get_by_text("Your decision is recorded")).to_be_visible()
        await operator.goto(f"{url}/operate/cases/{case_id}")
        await operator.get_by_role("button", name="Freeze round 1 into a gold label").click()
        await expect(operator.get_by_text("Frozen into a gold-label revision")).to_be_visible()
        await expect(operator.locator("tr.revision")).to_contain_text("adjudicator decision")

        # The gold label is HUMAN_ADJUDICATED: in the auditor's download and over gRPC.
        await operator.goto(f"{url}/audit")
        await operator.get_by_label("Tenant (empty").fill("acme")
        archive = zipfile.ZipFile(io.BytesIO(await download(operator, "Download")))
        (line,) = archive.read("corpus-acme.jsonl").decode().splitlines()
        record: dict[str, Any] = json.loads(line)["revision"]
        assert record["caseId"] == case_id
        assert record["provenance"] == "LABELING_PROVENANCE_HUMAN_ADJUDICATED"
        (revision,) = await revisions(stack, case_id)
        assert revision.provenance == gold_pb2.LABELING_PROVENANCE_HUMAN_ADJUDICATED
        assert revision.label.string_value == "none"
        async with stack.channel("adjudication") as channel:
            reviewers = await adj_grpc.AdjudicationServiceStub(channel).ListReviewers(
                adj.ListReviewersRequest(), metadata=stack.auth("operator"), timeout=TIMEOUT
            )
        vouched = {r.reviewer_id: (r.kind, r.attested_by) for r in reviewers.reviewers}
        human = gold_pb2.REVIEWER_KIND_HUMAN
        assert vouched == {
            name: (human, "operator") for name in ("alice", "bob", "carol", "mallory")
        }

        # The executor waits on an approval; dave approves it in the console; it goes on.
        dave = await sign_in("dave", "/approvals")
        async with executor_run(stack, provider, tmp_path) as (run, asks):

            async def the_request_is_shown() -> bool:
                await dave.goto(f"{url}/approvals")
                return await dave.locator("article.approval").count() == 1

            await eventually_async(
                the_request_is_shown,
                message="the executor's request in dave's list",
                timeout=TIMEOUT,
                interval=0.2,
            )
            assert not run.done()
            card = dave.locator("article.approval")
            await expect(card).to_contain_text("rerun test")
            await expect(card.locator(".requester")).to_have_text("operator")
            await card.get_by_label("Approve").check()
            await card.get_by_label("Why").fill("a rerun in a copy of the worktree is fine")
            await card.get_by_role("button", name="Record my decision").click()
            await expect(dave.get_by_text("Your decision is recorded")).to_be_visible()
            report = await asyncio.wait_for(run, 60)
            acquisition = report.steps[0].acquisition
            assert acquisition is not None
            approval_id = acquisition.approval_id
            used = await asks.get(approval_id)
        assert report.stop_reason is StopReason.RESOLVED
        assert (acquisition.probe, acquisition.outcome) == ("RERUN_TEST", Outcome.OBSERVED)
        step = report.steps[0].approval
        assert step is not None
        assert (step.outcome, step.decided_by) == (ApprovalOutcome.CONSUMED, ("dave",))
        assert used.state == pb.APPROVAL_STATE_CONSUMED
        assert used.candidate.candidate_id == RERUN

        # mallory (globex) sees nothing of acme anywhere.
        mallory = await sign_in("mallory", "/review")
        await expect(mallory.get_by_text("Nothing is waiting for your review")).to_be_visible()
        acme = (case_id, approval_id, "api:payments.create", SUBJECT, "alice", "bob", "carol")
        for path in (
            "/",
            "/review",
            "/adjudicate",
            "/approvals",
            "/operate",
            "/audit",
            "/operate/agreement?tenant=acme",
            "/audit/export?tenant=acme",
        ):
            await mallory.goto(f"{url}{path}")
            await expect(mallory.locator("h1")).to_be_visible()
            shown = await mallory.content()
            assert [a for a in acme if a in shown] == [], path
            if "tenant=acme" not in path:  # else the tenant she asked for is hers to see
                assert "acme" not in shown, path
        # Pages naming an acme id: the same page as for an id that does not exist.
        for path, real, made_up in (
            ("/review/{}", case_id, "case_0000000000000000"),
            ("/adjudicate/{}", case_id, "case_0000000000000000"),
            ("/operate/cases/{}", case_id, "case_0000000000000000"),
            ("/approvals/{}", approval_id, "approval_0000000000000000"),
        ):
            headings = []
            for which in (real, made_up):
                await mallory.goto(f"{url}{path.format(which)}")
                await expect(mallory.locator("h1")).to_be_visible()
                headings.append(await mallory.locator("h1").inner_text())
                shown = await mallory.content()
                assert [a for a in acme[2:] if a in shown] == [], path
            assert headings[0] == headings[1], (path, headings)
        for context in contexts:
            await context.close()

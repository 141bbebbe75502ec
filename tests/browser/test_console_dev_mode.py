"""`assay up` in dev mode, as the README's quick start has it: a person opens the printed
address in Chromium, signs in by typing a name (no credential: the services authenticate
nobody), sees that it is dev mode, and works through the queue; the calls carry no token."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from playwright.async_api import Browser, expect

from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import gold_pb2
from tests.service.adjudication_support import case_message, rid
from tests.support.browser import launch
from tests.support.eventually import eventually
from tests.support.processes import free_port, service_process

START_LINE = re.compile(r"^assay console serving on (http://127\.0\.0\.1:\d+)$", re.MULTILINE)
TIMEOUT = 20.0


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async for found in launch():
        yield found


def seed(target: str, reviewer: str) -> str:
    """``reviewer`` registered and one case enqueued, with no credential (dev mode)."""
    with grpc.insecure_channel(target) as channel:
        stub = adj_grpc.AdjudicationServiceStub(channel)
        stub.RegisterReviewer(
            adj.RegisterReviewerRequest(
                request_id=rid(),
                reviewer=adj.Reviewer(
                    reviewer_id=reviewer, kind=gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE
                ),
            ),
            timeout=TIMEOUT,
        )
        reply = stub.EnqueueCase(
            adj.EnqueueCaseRequest(request_id=rid(), case=case_message(tenant="acme")),
            timeout=TIMEOUT,
        )
        return str(reply.case.case_id)


async def test_a_person_signs_in_by_name_on_up_and_reviews(
    tmp_path: Path, browser: Browser
) -> None:
    ports = {name: free_port() for name in ("resolver", "planner", "adjudication")}
    env = {f"ASSAY_{name.upper()}_PORT": str(port) for name, port in ports.items()}
    env["ASSAY_CONSOLE_PORT"] = str(free_port())
    env["ASSAY_DB"] = str(tmp_path / "assay.db")
    log = tmp_path / "up.log"
    with service_process(["up"], log, ports["adjudication"], env) as up:

        def printed() -> str | None:
            found = START_LINE.search(log.read_text(encoding="utf-8", errors="replace"))
            return found.group(1) if found else None

        url = eventually(printed, message="the console's start line", timeout=TIMEOUT)
        case_id = seed(up.target, "alice")

        page = await browser.new_page()
        await page.goto(f"{url}/review")
        await expect(page).to_have_url(f"{url}/signin?next=/review")
        await expect(page.get_by_role("heading", name="Dev mode")).to_be_visible()
        await page.get_by_label("Name to act as").fill("alice")
        await page.get_by_role("button", name="Sign in (dev mode)").click()
        await expect(page.get_by_role("heading", name="My queue")).to_be_visible()
        await expect(page.get_by_text("(dev mode)")).to_be_visible()
        await expect(page.get_by_text("1 case waiting")).to_be_visible()
        await page.get_by_role("link", name="Start reviewing").click()
        await expect(page).to_have_url(f"{url}/review/{case_id}")
        await page.keyboard.press("1")
        await page.keyboard.press("Enter")
        await expect(page.get_by_text("Nothing is waiting for your review")).to_be_visible()
    assert "authorization" not in log.read_text().lower()

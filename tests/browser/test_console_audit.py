"""An auditor checks the ledger in the console, in a real Chromium against the real
services: the chain verified, the signed checkpoint saved, then checked for consistency
once the ledger has grown (and a tampered one refused), an event's inclusion proof checked
in the browser's page, and the corpus exported as JSON Lines and CSV with its manifest
(the JSON Lines passing ``assay audit verify-export``)."""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from assay.cli.main import main as cli
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from tests.browser.test_console_adjudicate import seed_disagreement
from tests.browser.test_console_operate import resolve_as_carol
from tests.service.adjudication_support import case_message, rid
from tests.support.browser import console_for, launch
from tests.support.secure import SecureStack, secure_stack

TIMEOUT = 20.0


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async for found in launch():
        yield found


async def frozen_case(stack: SecureStack) -> str:
    """A case alice and bob disagreed on, carol resolved and the operator froze."""
    case_id = await seed_disagreement(stack)
    await resolve_as_carol(stack, case_id)
    async with stack.channel("adjudication") as channel:
        await adj_grpc.AdjudicationServiceStub(channel).FreezeGoldLabel(
            adj.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id),
            metadata=stack.auth("operator"),
            timeout=TIMEOUT,
        )
    return case_id


async def grow(stack: SecureStack) -> None:
    async with stack.channel("adjudication") as channel:
        await adj_grpc.AdjudicationServiceStub(channel).EnqueueCase(
            adj.EnqueueCaseRequest(request_id=rid(), case=case_message(tenant="acme")),
            metadata=stack.auth("operator"),
            timeout=TIMEOUT,
        )


async def public_key_pem(stack: SecureStack) -> str:
    async with stack.channel("adjudication") as channel:
        reply = await adj_grpc.AdjudicationServiceStub(channel).GetCheckpoint(
            adj.GetCheckpointRequest(), metadata=stack.auth("operator"), timeout=TIMEOUT
        )
        return str(reply.public_key_pem)


async def download(page: Page, button: str) -> bytes:
    async with page.expect_download() as started:
        await page.get_by_role("button", name=button).click()
    saved = await (await started.value).path()
    return await asyncio.to_thread(Path(saved).read_bytes)


class TestAuditorPages:
    async def test_the_auditor_checks_the_chain_checkpoints_and_an_inclusion_proof(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """Verified chain; a saved checkpoint proven extended; a tampered one refused; event
        1 proven in today's signed tree."""
        async with secure_stack(tmp_path) as stack, console_for(stack) as url:
            await frozen_case(stack)
            page = await browser.new_page()
            await page.goto(f"{url}/audit")
            await page.get_by_role("button", name="Sign in as operator").click()
            await expect(page.locator(".chain-ok")).to_contain_text("Verified")
            size = int(await page.locator(".tree-size").inner_text())
            async with page.expect_download() as started:
                await page.get_by_role("link", name="Save this checkpoint").click()
            saved = await asyncio.to_thread(Path(await (await started.value).path()).read_text)
            assert saved.startswith("assay.v1/adjudication/")
            await grow(stack)
            await page.goto(f"{url}/audit")
            await page.locator("#checkpoint").set_input_files(
                {"name": "checkpoint.txt", "mimeType": "text/plain", "buffer": saved.encode()}
            )
            await page.get_by_role("button", name="Check consistency").click()
            await expect(page.locator(".consistency")).to_contain_text(
                f"Yes: consistent: the log grew from {size} to {size + 1} events"
            )
            lines = saved.split("\n")
            lines[1] = str(int(lines[1]) - 1)  # the size changed: the signature breaks
            await page.locator("#checkpoint").set_input_files(
                {"name": "old.txt", "mimeType": "text/plain", "buffer": "\n".join(lines).encode()}
            )
            await page.get_by_role("button", name="Check consistency").click()
            await expect(page.locator(".consistency")).to_contain_text("No: the saved checkpoint")
            await page.get_by_label("Event sequence").fill("1")
            await page.get_by_role("button", name="Prove inclusion").click()
            await expect(page.locator(".inclusion")).to_contain_text(
                f"Yes: included: leaf 0 of the signed tree of {size + 1} events"
            )

    async def test_the_auditor_downloads_the_corpus_with_its_manifest(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """JSON Lines and CSV, each in a ZIP beside the manifest counting the records."""
        async with secure_stack(tmp_path) as stack, console_for(stack) as url:
            case_id = await frozen_case(stack)
            page = await browser.new_page()
            await page.goto(f"{url}/audit")
            await page.get_by_role("button", name="Sign in as operator").click()
            await page.get_by_label("Tenant (empty").fill("acme")
            archive = zipfile.ZipFile(io.BytesIO(await download(page, "Download")))
            assert sorted(archive.namelist()) == [
                "corpus-acme.jsonl",
                "corpus-acme.jsonl.manifest.json",
            ]
            (record,) = archive.read("corpus-acme.jsonl").decode().splitlines()
            assert json.loads(record)["revision"]["caseId"] == case_id
            manifest = json.loads(archive.read("corpus-acme.jsonl.manifest.json"))
            assert manifest["recordCount"] == "1"  # int64: a string in proto JSON
            # What the CLI verifies offline: every record proven in the manifest's checkpoint.
            archive.extractall(tmp_path / "export")
            pub = tmp_path / "ledger.pub.pem"
            pub.write_text(await public_key_pem(stack))
            corpus = str(tmp_path / "export" / "corpus-acme.jsonl")
            verify = ["audit", "verify-export", corpus, "--public-key", str(pub)]
            assert await asyncio.to_thread(cli, verify) == 0
            await page.goto(f"{url}/audit")
            await page.get_by_label("Tenant (empty").fill("acme")
            await page.get_by_label("CSV").check()
            archive = zipfile.ZipFile(io.BytesIO(await download(page, "Download")))
            rows = archive.read("corpus-acme.csv").decode().splitlines()
            assert rows[0] == "case_id,reviewer_id,label"
            assert sorted(rows[1:]) == [f'{case_id},alice,"""key"""', f'{case_id},bob,"""none"""']
            assert json.loads(archive.read("corpus-acme.csv.manifest.json"))["recordCount"] == "1"

    async def test_a_reviewer_is_told_the_audit_pages_need_the_auditor_role(
        self, tmp_path: Path, browser: Browser
    ) -> None:
        """alice sees the refusal in plain words, not the ledger."""
        async with secure_stack(tmp_path) as stack, console_for(stack) as url:
            page = await browser.new_page()
            await page.goto(f"{url}/audit")
            await page.get_by_role("button", name="Sign in as alice").click()
            await expect(
                page.get_by_role("heading", name="Your account does not have the role")
            ).to_be_visible()
            await page.goto(f"{url}/audit/export?tenant=acme")
            await expect(
                page.get_by_role("heading", name="Your account does not have the role")
            ).to_be_visible()

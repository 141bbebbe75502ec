"""Listings of large items stay within the largest message, on both engines: a page holds as
many items as fit in half of it, and its token gives the rest.

The server runs with a 4 MiB message limit and cases of about 400 KB, so the default page of
50 would be five times over it; the same arithmetic (a page of 50 cases of 1.5 MB against
64 MiB) is what made a default reviewer queue fail with a bare RESOURCE_EXHAUSTED."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from assay.runtime import paging
from assay.runtime.config import ServerConfig
from assay.runtime.server import serving
from assay.services.adjudication.service import build_spec
from assay.services.registry import ServeOptions
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc
from assay.v1 import gold_pb2
from tests.service.adjudication_support import (
    TIMEOUT,
    enqueue,
    is_postgres,
    ledger_key,
    register,
    review,
    rid,
)

LIMIT = 4 * 1024 * 1024
BIG = "x" * 400_000
CASES = 12


@contextlib.asynccontextmanager
async def small_server(db: str) -> AsyncIterator[pb_grpc.AdjudicationServiceStub]:
    """The adjudication service over ``db`` with a 4 MiB message limit, and a client
    channel with the same limit."""
    key = ledger_key(db) if is_postgres(db) else None
    options = ServeOptions(port=0, db_path=db, ledger_signing_key=key, max_message_bytes=LIMIT)
    spec = await build_spec(options)
    config = ServerConfig(host="127.0.0.1", max_message_bytes=LIMIT)
    limits = [("grpc.max_receive_message_length", LIMIT), ("grpc.max_send_message_length", LIMIT)]
    async with (
        serving([spec], config) as running,
        grpc.aio.insecure_channel(running[0].address, options=limits) as channel,
    ):
        yield pb_grpc.AdjudicationServiceStub(channel)


async def every_page(
    call: Callable[[str], Awaitable[Any]], items: Callable[[Any], list[Any]]
) -> list[list[Any]]:
    """Each page of a listing, following its tokens; each response within the limit."""
    pages: list[list[Any]] = []
    token = ""
    while True:
        reply = await call(token)
        assert reply.ByteSize() <= LIMIT
        pages.append(items(reply))
        token = reply.next_page_token
        if not token:
            return pages


async def big_cases(stub: pb_grpc.AdjudicationServiceStub) -> list[str]:
    return [(await enqueue(stub, candidates=(BIG, "none"))).case_id for _ in range(CASES)]


class TestLargePages:
    async def test_a_reviewers_default_queue_page_fits_the_message_limit(
        self, adjudication_db: str
    ) -> None:
        """12 cases of 400 KB under a 4 MiB limit: pages of at most half of it, every case
        exactly once across them."""
        async with small_server(adjudication_db) as stub:
            await register(stub, "ann")
            made = await big_cases(stub)

            def call(token: str) -> Awaitable[Any]:
                request = pb.ListQueueRequest(reviewer_id="ann", page_token=token)
                return stub.ListQueue(request, timeout=TIMEOUT)  # type: ignore[no-any-return]

            pages = await every_page(call, lambda r: [c.case_id for c in r.cases])
        assert len(pages) >= 3
        assert all(0 < len(page) <= paging.page_bytes(LIMIT) // len(BIG) for page in pages)
        assert sorted(c for page in pages for c in page) == sorted(made)

    async def test_the_adjudication_worklist_pages_by_bytes(self, adjudication_db: str) -> None:
        """Disagreed cases with a 400 KB label in a review page within the limit too."""
        async with small_server(adjudication_db) as stub:
            for name in ("ann", "bob", "cy"):
                await register(stub, name)
            made = await big_cases(stub)
            for case_id in made:
                await review(stub, case_id, "ann", BIG)
                await review(stub, case_id, "bob", "none")

            def call(token: str) -> Awaitable[Any]:
                request = pb.ListAdjudicationQueueRequest(adjudicator_id="cy", page_token=token)
                return stub.ListAdjudicationQueue(request, timeout=TIMEOUT)  # type: ignore[no-any-return]

            pages = await every_page(call, lambda r: [i.case.case_id for i in r.items])
        assert len(pages) >= 3
        assert sorted(c for page in pages for c in page) == sorted(made)

    async def test_gold_label_revisions_page_by_bytes(self, adjudication_db: str) -> None:
        """Frozen 400 KB labels list in pages within the limit, each revision once."""
        async with small_server(adjudication_db) as stub:
            made = await frozen_big_labels(stub)

            def call(token: str) -> Awaitable[Any]:
                request = pb.ListGoldLabelRevisionsRequest(page_token=token)
                return stub.ListGoldLabelRevisions(request, timeout=TIMEOUT)  # type: ignore[no-any-return]

            pages = await every_page(call, lambda r: [g.case_id for g in r.revisions])
        assert len(pages) >= 3
        assert sorted(c for page in pages for c in page) == sorted(made)

    async def test_an_export_batch_of_large_labels_is_split_within_the_limit(
        self, adjudication_db: str
    ) -> None:
        """One batch of 12 records of 400 KB labels (and cases) arrives as several messages,
        each within the limit, every record once, then the manifest counting them all."""
        async with small_server(adjudication_db) as stub:
            made = await frozen_big_labels(stub)
            sizes: list[int] = []
            exported: list[str] = []
            manifest = None
            async for message in stub.ExportCorpus(pb.ExportCorpusRequest(), timeout=TIMEOUT):
                assert message.ByteSize() <= LIMIT
                if message.WhichOneof("item") == "batch":
                    sizes.append(message.ByteSize())
                    exported.extend(r.revision.case_id for r in message.batch.records)
                else:
                    manifest = message.manifest
        assert len(sizes) >= 3
        assert sorted(exported) == sorted(made)
        assert manifest is not None
        assert manifest.record_count == CASES


async def frozen_big_labels(stub: pb_grpc.AdjudicationServiceStub) -> list[str]:
    """12 big cases, each reviewed BIG twice, resolved unanimously and frozen."""
    for name in ("ann", "bob"):
        await register(stub, name)
    made = await big_cases(stub)
    for case_id in made:
        await review(stub, case_id, "ann", BIG)
        await review(stub, case_id, "bob", BIG)
        await stub.ResolveCase(
            pb.ResolveCaseRequest(
                request_id=rid(),
                case_id=case_id,
                basis=gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT,
            ),
            timeout=TIMEOUT,
        )
        await stub.FreezeGoldLabel(
            pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id), timeout=TIMEOUT
        )
    return made

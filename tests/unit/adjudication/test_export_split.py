"""An export batch larger than the message budget is sent as several messages, records and
approvals alike: each within the budget (or a single item), in order, every item once."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from assay.services.adjudication.adapters.servicer import _within
from assay.v1 import adjudication_service_pb2 as pb

BUDGET = 10_000


def approvals(count: int) -> pb.ExportCorpusResponse:
    found = [pb.ExportedApproval(approval_id=f"a{i}", reason="x" * 2_000) for i in range(count)]
    return pb.ExportCorpusResponse(approvals=pb.ApprovalExportBatch(approvals=found))


def records(count: int) -> pb.ExportCorpusResponse:
    found = [
        pb.CorpusRecord(case=pb.BlindedCase(case_id=f"c{i}", context="x" * 2_000))
        for i in range(count)
    ]
    return pb.ExportCorpusResponse(batch=pb.CorpusRecordBatch(records=found))


def ids(message: pb.ExportCorpusResponse) -> list[str]:
    if message.WhichOneof("item") == "approvals":
        return [a.approval_id for a in message.approvals.approvals]
    return [r.case.case_id for r in message.batch.records]


class TestWithin:
    @pytest.mark.parametrize("make", [approvals, records])
    def test_a_large_batch_is_split_in_order_each_part_within_the_budget(
        self, make: Callable[[int], pb.ExportCorpusResponse]
    ) -> None:
        """Twenty items of about 2 KB against 10 KB: several messages of the same kind."""
        whole = make(20)
        parts = _within(whole, BUDGET)
        assert len(parts) >= 4
        assert all(p.WhichOneof("item") == whole.WhichOneof("item") for p in parts)
        assert all(p.ByteSize() <= BUDGET + 16 for p in parts)
        assert [i for p in parts for i in ids(p)] == ids(whole)

    def test_a_batch_within_the_budget_is_sent_as_it_is(self) -> None:
        """Two approvals fit: one message, the same one."""
        small = approvals(2)
        assert _within(small, BUDGET) == [small]

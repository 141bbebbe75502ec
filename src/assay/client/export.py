"""Reading an ``ExportCorpus`` stream as records then a manifest, and checking it is whole.

The stream sends batches of records, then (when asked) batches of approvals, and exactly
one manifest, last. A client that simply iterated batches could not tell a complete export
from one cut short; ``ExportTracker`` flattens batches into records and approvals and
refuses to call an export finished until its manifest arrived and its ``record_count`` and
``approval_count`` match what was received.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc

from assay.client.errors import DataLossError
from assay.v1 import adjudication_service_pb2 as adj

ExportItem = adj.CorpusRecord | adj.ExportedApproval | adj.ExportManifest


class ExportTracker:
    """Flattens export messages and checks the stream's shape (sync and async share it)."""

    def __init__(self) -> None:
        self.records = 0
        self.approvals = 0
        self.manifest: adj.ExportManifest | None = None

    def items(self, message: adj.ExportCorpusResponse) -> Iterator[ExportItem]:
        """The records or approvals of a batch, or the manifest."""
        if self.manifest is not None:
            raise _broken("the export stream sent a message after its manifest")
        kind = message.WhichOneof("item")
        if kind == "batch":
            self.records += len(message.batch.records)
            yield from message.batch.records
        elif kind == "approvals":
            self.approvals += len(message.approvals.approvals)
            yield from message.approvals.approvals
        elif kind == "manifest":
            if message.manifest.record_count != self.records:
                raise _broken(
                    f"the manifest counts {message.manifest.record_count} records "
                    f"but {self.records} arrived"
                )
            if message.manifest.approval_count != self.approvals:
                raise _broken(
                    f"the manifest counts {message.manifest.approval_count} approvals "
                    f"but {self.approvals} arrived"
                )
            self.manifest = message.manifest
            yield message.manifest

    def finish(self) -> adj.ExportManifest:
        """The manifest; ``DataLossError`` when the stream ended without one."""
        if self.manifest is None:
            raise _broken(
                f"the export stream ended after {self.records} records without a manifest"
            )
        return self.manifest


def _broken(message: str) -> DataLossError:
    # Client-side finding: no server ErrorReason applies, so none is invented.
    return DataLossError(grpc.StatusCode.DATA_LOSS, message)

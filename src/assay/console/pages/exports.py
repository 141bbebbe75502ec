"""An export download: the corpus streamed from ExportCorpus into one ZIP holding the
records (JSON Lines, or CSV of one row per review) and the manifest that closes them.

The records are written in the formats of ``assay export`` (``assay.cli.corpus_export``,
which the console may not import: the import contract keeps the CLI out of it), so
``assay audit verify-export`` checks a JSONL file from here; a test holds the two writers
to the same bytes. The ZIP is
written as the stream arrives (data descriptors, no seeking), so the console holds one
batch at a time. A stream that ends without its manifest (``DataLossError`` from the
client) breaks the download rather than giving a file that looks whole.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TextIO

from google.protobuf import json_format

from assay.client.export import ExportItem
from assay.v1 import adjudication_service_pb2 as adj

CSV_HEADER = ("case_id", "reviewer_id", "label")
_NOT_A_LABEL = {
    adj.REVIEW_OUTCOME_UNRESOLVED: "unresolved",
    adj.REVIEW_OUTCOME_NOT_EVALUABLE: "not evaluable",
}
Writer = Callable[[Sequence[adj.CorpusRecord]], None]


def record_writer(fmt: str, sink: TextIO) -> Writer:
    """Records as JSON Lines (proto JSON, keys sorted), or as CSV: a header, then one row
    per review of the round each gold label was frozen from (a label by its key)."""
    if fmt == "jsonl":

        def lines(records: Sequence[adj.CorpusRecord]) -> None:
            for record in records:
                data = json_format.MessageToDict(record)
                sink.write(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")

        return lines
    out = csv.writer(sink, lineterminator="\n")
    out.writerow(CSV_HEADER)

    def rows(records: Sequence[adj.CorpusRecord]) -> None:
        for record in records:
            for review in record.reviews:
                if review.round == record.revision.round:
                    label = (
                        review.label_key
                        if review.outcome == adj.REVIEW_OUTCOME_LABEL
                        else _NOT_A_LABEL.get(review.outcome, "unspecified")
                    )
                    out.writerow((record.revision.case_id, review.reviewer_id, label))

    return rows


class _Chunks(io.RawIOBase):
    """A write-only sink the ZIP writer fills and the response drains (no seek, no tell)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out, self.parts = b"".join(self.parts), []
        return out


def names(fmt: str, tenant: str) -> tuple[str, str]:
    """The records' and the manifest's file names inside the ZIP."""
    stem = f"corpus-{tenant}" if tenant else "corpus"
    records = f"{stem}.{fmt}"
    return records, f"{records}.manifest.json"


async def zipped(fmt: str, tenant: str, items: AsyncIterator[ExportItem]) -> AsyncIterator[bytes]:
    """The ZIP's bytes as ``items`` (records, then the manifest) arrive."""
    records_name, manifest_name = names(fmt, tenant)
    sink = _Chunks()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        manifest: adj.ExportManifest | None = None
        with (
            archive.open(records_name, "w") as raw,
            io.TextIOWrapper(raw, encoding="utf-8", newline="") as text,
        ):
            write = record_writer(fmt, text)
            async for item in items:
                if isinstance(item, adj.ExportManifest):
                    manifest = item
                elif isinstance(item, adj.CorpusRecord):
                    write((item,))
                text.flush()
                yield sink.take()
        if manifest is not None:
            data = json_format.MessageToDict(manifest)
            archive.writestr(manifest_name, json.dumps(data, indent=2, sort_keys=True) + "\n")
    yield sink.take()

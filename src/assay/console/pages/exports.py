"""An export download: the corpus streamed from ExportCorpus into one ZIP holding the
records (JSON Lines, or CSV of one row per review) and the manifest that closes them.

The records are written by ``assay export``'s own writers (``assay.client.export_formats``),
so ``assay audit verify-export`` checks a JSONL file from here. The ZIP is written as the
stream arrives (data descriptors, no seeking), so the console holds one batch at a time. A
stream that ends without its manifest (``DataLossError`` from the client) breaks the
download rather than giving a file that looks whole.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import AsyncIterator

from google.protobuf import json_format

from assay.client.export import ExportItem
from assay.client.export_formats import record_writer
from assay.v1 import adjudication_service_pb2 as adj


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

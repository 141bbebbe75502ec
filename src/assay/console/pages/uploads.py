"""Cases from an uploaded file, and the service's verdict on them row by row.

A JSONL file holds one Case in proto JSON per line; a CSV file has a header row naming
the columns of ``CSV_COLUMNS`` (``candidate_values`` a JSON array, ``local_verdict`` a
JSON value, ``evidence_refs`` a JSON array or empty). Reading collects every row that
cannot be read; a file that reads whole goes to EnqueueCases, which stores all of it or
none, and each violation it reports by position (``cases[4].candidate_values[1]``) is
turned back into the row and line of the file. Size and rows are bounded before any of
it is parsed.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format

from assay.errors import FieldViolation
from assay.v1 import adjudication_service_pb2 as adj

MAX_BYTES = 1024 * 1024
MAX_ROWS = 1000  # EnqueueCases takes at most 1,000 cases.
CSV_COLUMNS = (
    "tenant",
    "subject",
    "predicate",
    "candidate_values",
    "local_verdict",
    "context",
    "evidence_refs",
    "origin",
    "origin_ref",
)
_JSON_COLUMNS = {"candidate_values", "local_verdict", "evidence_refs"}
_POSITION = re.compile(r"^cases\[(\d+)\]\.?(.*)$")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the file: which row (1-based, 0 for the file), its line, what."""

    row: int
    line: int
    where: str
    what: str


@dataclass
class Upload:
    """The cases read from a file, each with its line, and what could not be read."""

    cases: list[adj.Case] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def read_upload(name: str, data: bytes) -> Upload:
    """The file's cases (CSV when its name ends in .csv, else JSONL)."""
    found = Upload()
    if len(data) > MAX_BYTES:
        found.problems.append(Problem(0, 0, "file", f"larger than {MAX_BYTES} bytes"))
        return found
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        found.problems.append(Problem(0, 0, "file", "not UTF-8 text"))
        return found
    rows = _csv_rows(text) if name.lower().endswith(".csv") else _jsonl_rows(text)
    for number, (line, item) in enumerate(rows, start=1):
        if number > MAX_ROWS:
            found.problems.append(Problem(0, 0, "file", f"more than {MAX_ROWS} rows"))
            return found
        if isinstance(item, str):
            found.problems.append(Problem(number, line, "row", item))
            continue
        try:
            found.cases.append(json_format.ParseDict(item, adj.Case()))
            found.lines.append(line)
        except json_format.ParseError as error:
            found.problems.append(Problem(number, line, "row", str(error).splitlines()[0]))
    if not found.cases and not found.problems:
        found.problems.append(Problem(0, 0, "file", "no cases in it"))
    return found


def _jsonl_rows(text: str) -> list[tuple[int, dict[str, Any] | str]]:
    rows: list[tuple[int, dict[str, Any] | str]] = []
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as error:
            rows.append((line, f"not JSON: {error.msg}"))
            continue
        rows.append((line, item if isinstance(item, dict) else "not a JSON object"))
    return rows


def _csv_rows(text: str) -> list[tuple[int, dict[str, Any] | str]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    unknown = sorted(set(reader.fieldnames or ()) - set(CSV_COLUMNS))
    if unknown or not reader.fieldnames:
        return [(1, f"the header must name columns among {', '.join(CSV_COLUMNS)}")]
    rows: list[tuple[int, dict[str, Any] | str]] = []
    for record in reader:
        line = reader.line_num
        item: dict[str, Any] = {}
        bad = ""
        for column, value in record.items():
            if column is None or value is None or value == "":
                continue
            if column in _JSON_COLUMNS:
                try:
                    value = json.loads(value)
                except json.JSONDecodeError:
                    bad = f"{column}: not JSON"
                    break
            if column in ("origin", "origin_ref"):
                item.setdefault("lineage", {})[_camel(column)] = value
            else:
                item[_camel(column)] = value
        rows.append((line, bad or item))
    return rows


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def named(upload: Upload, violations: tuple[FieldViolation, ...]) -> list[Problem]:
    """The service's violations by the file's rows (``cases[4].x`` is row 5, field x)."""
    problems = []
    for violation in violations:
        match = _POSITION.match(violation.field)
        if match and int(match.group(1)) < len(upload.lines):
            index = int(match.group(1))
            where = match.group(2) or "row"
            problems.append(Problem(index + 1, upload.lines[index], where, violation.description))
        else:
            problems.append(Problem(0, 0, violation.field, violation.description))
    return problems

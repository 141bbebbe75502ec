"""The export's file formats (``assay export``, the console's download): JSON Lines or CSV.

JSON Lines are the records as sent, proofs and all: what ``assay audit verify-export``
checks. CSV is for running one's own agreement or aggregation: one row per review,
(case_id, reviewer_id, label), which crowd-kit (task, worker, label) and the
``krippendorff`` package (a pivot to reviewers × cases) take without conversion. Its rows
are the reviews of the round each exported gold label was frozen from, so a (case,
reviewer) pair appears once, as both tools require; the JSON Lines (with ``--reviews``)
keep every round. A label is its canonical key (the JSON the server compares reviews by),
and an answer that is not a label is ``unresolved`` or ``not evaluable``, as in
``ComputeAgreement``'s categories.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from typing import TextIO

from google.protobuf import json_format
from google.protobuf.message import Message

from assay.v1 import adjudication_service_pb2 as pb

FORMATS = ("jsonl", "csv")
CSV_HEADER = ("case_id", "reviewer_id", "label")
_NOT_A_LABEL = {
    pb.REVIEW_OUTCOME_UNRESOLVED: "unresolved",
    pb.REVIEW_OUTCOME_NOT_EVALUABLE: "not evaluable",
}

Writer = Callable[[Sequence[pb.CorpusRecord]], int]


def review_label(review: pb.Review) -> str:
    """The review's category: its label key, or what it answered instead of a label."""
    if review.outcome == pb.REVIEW_OUTCOME_LABEL:
        return review.label_key
    return _NOT_A_LABEL.get(review.outcome, "unspecified")


def write_line(sink: TextIO, message: Message) -> None:
    """One message as a line of JSON (its proto JSON names, keys sorted)."""
    data = json_format.MessageToDict(message)
    sink.write(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")


def record_writer(fmt: str, sink: TextIO) -> Writer:
    """A function writing a batch of records to ``sink`` in ``fmt`` (a CSV header first),
    returning how many records it wrote."""
    if fmt == "jsonl":

        def write_lines(records: Sequence[pb.CorpusRecord]) -> int:
            for record in records:
                write_line(sink, record)
            return len(records)

        return write_lines
    rows = csv.writer(sink, lineterminator="\n")
    rows.writerow(CSV_HEADER)

    def write_rows(records: Sequence[pb.CorpusRecord]) -> int:
        for record in records:
            for review in record.reviews:
                if review.round == record.revision.round:
                    rows.writerow(
                        (record.revision.case_id, review.reviewer_id, review_label(review))
                    )
        return len(records)

    return write_rows

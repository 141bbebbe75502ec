"""``assay case enqueue``: a file of cases stored through EnqueueCases, all or nothing per chunk.

A file of up to 1,000 cases is one EnqueueCases call: every case is stored or
none is, and a refusal lists every bad field (``cases[4].subject``). A longer
file goes in chunks of up to 1,000 cases of one tenant (a batch has one), each
all or nothing; when one is refused the
chunks before it stay stored, and the command prints them before the error, so
nothing stored goes unreported.

Each chunk's request id is derived from ``--request-id`` when given, and else
from the chunk's content, so running the same command again returns the cases
stored the first time instead of storing them twice (a new ``--request-id``
enqueues the same content anew). Work that takes over a second shows a progress
bar on stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sys
from collections.abc import Sequence

from google.protobuf import json_format

from assay.cli import adjudication_render as render
from assay.cli.common import CliError, Remote, json_line, print_json
from assay.cli.progress import progress
from assay.client import AdjudicationClient
from assay.v1 import adjudication_service_pb2 as pb

CHUNK = 1000  # the most EnqueueCases takes at once


def chunks(cases: Sequence[pb.Case], size: int = CHUNK) -> list[Sequence[pb.Case]]:
    """Runs of at most ``size`` cases of one tenant (a batch has one), in file order."""
    parts: list[Sequence[pb.Case]] = []
    start = 0
    for end in range(1, len(cases) + 1):
        if end == len(cases) or end - start == size or cases[end].tenant != cases[start].tenant:
            parts.append(cases[start:end])
            start = end
    return parts


def request_ids(given: str, parts: Sequence[Sequence[pb.Case]]) -> list[str]:
    """One retry key per chunk: ``given`` (suffixed ``-<n>`` when there are several), or a
    digest of the chunk's cases, so the same file sent again is recognised."""
    if given:
        return [given] if len(parts) == 1 else [f"{given}-{i}" for i in range(len(parts))]
    found = []
    for part in parts:
        content = hashlib.sha256()
        for case in part:
            data = case.SerializeToString(deterministic=True)
            content.update(len(data).to_bytes(8, "big") + data)
        found.append(f"enqueue-{content.hexdigest()[:48]}")
    return found


def enqueue(args: argparse.Namespace, cases: Sequence[pb.Case], many: bool) -> list[pb.Case]:
    """Send ``cases`` chunk by chunk; the stored cases, in file order. A refused chunk
    raises ``CliError`` after the chunks before it were printed (``emit``)."""
    parts = chunks(cases)
    ids = request_ids(args.request_id, parts)
    stored: list[pb.Case] = []
    remote = Remote.of(args, "adjudication")
    quiet = args.json or getattr(args, "jsonl", False)
    with (
        remote.client(AdjudicationClient) as client,
        progress("enqueueing cases", len(cases), enabled=sys.stderr.isatty() and not quiet) as step,
    ):
        for part, request_id in zip(parts, ids, strict=True):
            request = pb.EnqueueCasesRequest(request_id=request_id, cases=part)
            first = len(stored)
            where = (
                args.file
                if len(parts) == 1
                else f"{args.file} cases {first}-{first + len(part) - 1}"
            )
            try:
                reply = remote.call(functools.partial(client.enqueue_cases, request), where)
            except CliError as error:
                if stored:
                    emit(args, stored, many)
                    note = (
                        f" ({len(stored):,} case(s) of earlier chunks were stored, printed above)"
                    )
                    raise CliError(f"{error}{note}", error.exit_code) from None
                raise
            stored.extend(reply.cases)
            step(len(part))
    return stored


def emit(args: argparse.Namespace, stored: Sequence[pb.Case], many: bool) -> None:
    """``--jsonl``: one case per line; ``--json``: one JSON array (one object when the file
    held a single case, not a list); else a table."""
    if getattr(args, "jsonl", False):
        for case in stored:
            sys.stdout.write(json_line(json_format.MessageToDict(case)) + "\n")
    elif args.json and many:
        found = [json_format.MessageToDict(case) for case in stored]
        sys.stdout.write(json.dumps(found, indent=2, sort_keys=True) + "\n")
    elif args.json:
        print_json(stored[0])
    else:
        render.cases(stored)

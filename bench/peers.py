"""Assay beside crowd-kit on the same claims: what a user would pick instead.

Not a test: a script (``python bench/peers.py [--claims N]``) that generates claims with
``bench/resolver.py``'s generator (100 claims per subject, 5 predicates, correlation
groups, 2% reviewed out, 1% superseding) at 1,000, 10,000, 100,000 and 1,000,000 claims
(``--claims N``: one size) and times, best of several repeats, in one process:

- crowd-kit's ``MajorityVote``, ``Wawa`` and ``DawidSkene`` (10 iterations) ``fit_predict``
  on a ready pandas DataFrame (task = subject and predicate, worker = source ref, label =
  the value's canonical key): what those libraries cost once the data is in their shape;
- Assay, request bytes in -> response bytes out, in-process through the real servicer as
  a live call makes it (large work on a worker thread, the response serialized there;
  ``ResolveEvidence`` for the per-claim form, ``ResolveColumns`` for the columnar one: an
  Arrow IPC stream built with pyarrow from the same claims, repeated strings
  dictionary-encoded with the narrowest index type as pandas categoricals are,
  once ZSTD-compressed and once uncompressed, each on its own line), at FULL and SUMMARY
  detail, with the cyclic GC paused as the servicer pauses it per request. A form whose
  request passes the server's 64 MiB message limit (the per-claim form at 1,000,000
  claims, and the uncompressed columnar one) is skipped, with the reason printed.
  ResolveEvidence resolves every request claim by claim; bulk evidence is
  ResolveColumns's, so the per-claim lines past a few thousand claims show what a caller
  gains by sending columns, and carry no target.

Every measurement is one line a program can read (each shown here over two)::

    peers: form=<per-claim|columnar> detail=<full|summary> claims=<N>
        assay_s=<s> majority_vote_s=<s> ratio=<assay/majority_vote>
        assay_cpu_s=<s> majority_vote_cpu_s=<s> cpu_ratio=<assay/majority_vote>
        [codec=<zstd|none>]  (columnar lines only: the request's record batches)
    peers: peer=<wawa|dawid_skene_10> claims=<N> peer_s=<s> majority_vote_s=<s>
        peer_cpu_s=<s> majority_vote_cpu_s=<s>
    peers: memory form=<...> detail=<...> claims=<N>
        peak_rss_bytes=<b> bytes_per_claim=<b> method=vmhwm-subprocess

Peak memory is measured in a fresh subprocess per size, form and detail (the request's
bytes handed over in a private temporary file), over one call after a warm-up call (lazy
imports and caches are not the call's): the peak resident set (Linux's ``VmHWM``, reset
just before the call through ``/proc/self/clear_refs``; not ``ru_maxrss``, which Linux
carries across ``exec`` from the parent) less the resident set just before the call, per
claim; ``peak_rss_bytes`` is the peak itself, the process's baseline (the interpreter,
the request bytes) included.

The machine is shared: compare ratios within one run, and repeat the run. The CPU-time
fields (this process's, so a loaded machine's other work is left out) are the steadier of
the two; the ratio the targets name is the wall-clock one.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from resolver import build_evidence

from assay.runtime.config import DEFAULT_MAX_MESSAGE_BYTES
from assay.services.resolver.service import make_servicer
from assay.services.resolver.wire.columns_request import parse_columns_request
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as pb


def _module(name: str) -> Any:
    """A benchmark-only library without type stubs (pyarrow, pandas, crowd-kit), untyped."""
    return importlib.import_module(name)


SIZES = (1_000, 10_000, 100_000, 1_000_000)
DETAILS = {"full": pb.RESOLUTION_DETAIL_FULL, "summary": pb.RESOLUTION_DETAIL_SUMMARY}
FORMS = ("per-claim", "columnar")
CODECS = {"zstd": "zstd", "none": None}  # the columnar request's record batches, by name


def repeats_for(claims: int) -> int:
    return 7 if claims <= 10_000 else 5 if claims <= 100_000 else 3


def best_of(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """The fastest of ``repeats`` calls in seconds, wall-clock and this process's CPU
    time (each the least of its own), the cyclic GC paused for each."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            started, started_cpu = time.perf_counter(), time.process_time()
            fn()
            cpu = min(cpu, time.process_time() - started_cpu)
            wall = min(wall, time.perf_counter() - started)
        finally:
            gc.enable()
    return wall, cpu


# ---- the claims in each shape -------------------------------------------------------


def _value_json(claim: claim_pb2.Claim) -> str:
    kind = claim.value.WhichOneof("kind")
    if kind == "string_value":
        return json.dumps(claim.value.string_value)
    if kind == "number_value":
        return json.dumps(claim.value.number_value)
    if kind == "bool_value":
        return "true" if claim.value.bool_value else "false"
    raise ValueError(f"the generator made a {kind} value")


def columns_of(evidence: claim_pb2.Evidence) -> dict[str, list[Any]]:
    """The claims column by column, as ResolveColumns names them (None: not set)."""
    cols: dict[str, list[Any]] = {
        name: []
        for name in [
            *("id", "subject", "predicate", "value", "source", "source_ref", "source_revision"),
            *("method", "confidence", "observe_time", "correlation_group", "relation_kind"),
            *("relation_target", "review_status"),
        ]
    }
    for c in evidence.claims:
        cols["id"].append(c.id or None)
        cols["subject"].append(c.subject)
        cols["predicate"].append(c.predicate)
        cols["value"].append(_value_json(c))
        cols["source"].append(c.source)
        cols["source_ref"].append(c.source_ref)
        cols["source_revision"].append(c.source_revision)
        cols["method"].append(c.method)
        cols["confidence"].append(c.confidence)
        has_time = c.HasField("observe_time")
        cols["observe_time"].append(
            c.observe_time.seconds * 1_000_000 + c.observe_time.nanos // 1000 if has_time else None
        )
        cols["correlation_group"].append(c.correlation_group or None)
        related = c.HasField("relation")
        cols["relation_kind"].append(int(c.relation.kind) if related else None)
        cols["relation_target"].append(c.relation.target_claim_id if related else None)
        cols["review_status"].append(int(c.review_status))
    return cols


def arrow_claims(cols: dict[str, list[Any]], codec: str | None = "zstd") -> bytes:
    """An Arrow IPC stream of the claims: repeated strings dictionary-encoded, its record
    batches compressed with ``codec`` (None: uncompressed)."""
    pa = _module("pyarrow")

    dictionary = {"subject", "predicate", "value", "source", "source_ref", "source_revision"}
    dictionary |= {"method", "correlation_group", "relation_target"}
    arrays = {}
    for name, data in cols.items():
        if name == "confidence":
            arrays[name] = pa.array(data, pa.float64())
        elif name == "observe_time":
            arrays[name] = pa.array(data, pa.timestamp("us", tz="UTC"))
        elif name in ("relation_kind", "review_status"):
            arrays[name] = pa.array(data, pa.int32())
        elif name in dictionary:
            arrays[name] = _categorical(pa, pa.array(data, pa.string()))
        else:
            arrays[name] = pa.array(data, pa.string())
    table = pa.table(arrays)
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=codec)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table, max_chunksize=65_536)
    return bytes(sink.getvalue().to_pybytes())


def _categorical(pa: Any, column: Any) -> Any:
    """A dictionary-encoded column with the narrowest signed index type that holds it,
    as ``pyarrow.Table.from_pandas`` writes a pandas categorical (int8 up to 127
    categories, then int16, then int32)."""
    encoded = column.dictionary_encode()
    size = len(encoded.dictionary)
    index = pa.int8() if size < 1 << 7 else pa.int16() if size < 1 << 15 else pa.int32()
    return pa.DictionaryArray.from_arrays(encoded.indices.cast(index), encoded.dictionary)


def frame_of(cols: dict[str, list[Any]]) -> Any:
    """crowd-kit's input: task = subject and predicate, worker = source ref, label = value."""
    pd = _module("pandas")

    return pd.DataFrame(
        {
            "task": [
                f"{s}\x1f{p}" for s, p in zip(cols["subject"], cols["predicate"], strict=True)
            ],
            "worker": cols["source_ref"],
            "label": cols["value"],
        }
    )


Key = tuple[str, str, str]
"""(form, detail, codec): codec is "" for the per-claim form (protobuf, never compressed)."""


def requests_of(evidence: claim_pb2.Evidence, arrow: dict[str, bytes]) -> dict[Key, bytes]:
    """Serialized requests by (form, detail, codec); ``arrow`` holds the stream per codec."""
    out = {}
    for detail, number in DETAILS.items():
        out["per-claim", detail, ""] = pb.ResolveEvidenceRequest(
            evidence=evidence, detail=number
        ).SerializeToString()
        for codec, stream in arrow.items():
            out["columnar", detail, codec] = pb.ResolveColumnsRequest(
                claims_arrow=stream, detail=number
            ).SerializeToString()
    return out


def _fields(codec: str) -> str:
    """The fields a line gains after the required ones: the columnar form's codec."""
    return f" codec={codec}" if codec else ""


# ---- the calls timed ------------------------------------------------------------------


class _LiveCall:
    """What the servicer reads of a live call's context: no deadline. With a context it
    does what the server does (large work on a worker, the response serialized there)."""

    def time_remaining(self) -> float | None:
        return None


class Assay:
    """Bytes in -> the servicer in-process, as a live call -> response bytes out."""

    def __init__(self) -> None:
        self.servicer = make_servicer()
        self.loop = asyncio.new_event_loop()
        self.context: Any = _LiveCall()

    def call(self, form: str, raw: bytes) -> bytes:
        servicer: Any = self.servicer
        coroutine: Any
        if form == "per-claim":
            request = pb.ResolveEvidenceRequest.FromString(raw)
            coroutine = servicer.ResolveEvidence(request, self.context)
        else:
            # Parsed as the server parses it: the stream left uncopied.
            coroutine = servicer.ResolveColumns(parse_columns_request(raw), self.context)
        response = self.loop.run_until_complete(coroutine)
        if isinstance(response, bytes):
            return response
        data: bytes = response.SerializeToString(deterministic=True)
        return data


def peers() -> dict[str, Callable[[Any], object]]:
    crowd = _module("crowdkit.aggregation")
    return {
        "majority_vote": lambda df: crowd.MajorityVote().fit_predict(df),
        "wawa": lambda df: crowd.Wawa().fit_predict(df),
        "dawid_skene_10": lambda df: crowd.DawidSkene(n_iter=10).fit_predict(df),
    }


def measure(claims: int, memory: bool) -> None:
    """Every line for one size."""
    started = time.perf_counter()
    evidence = build_evidence(claims)
    cols = columns_of(evidence)
    arrow = {name: arrow_claims(cols, codec) for name, codec in CODECS.items()}
    frame = frame_of(cols)
    requests = requests_of(evidence, arrow)
    del cols
    print(
        f"# {claims:,} claims: generated in {time.perf_counter() - started:.1f} s; "
        f"per-claim request {len(requests['per-claim', 'full', '']):,} bytes, "
        f"columnar {len(requests['columnar', 'full', 'zstd']):,} bytes (ZSTD), "
        f"{len(requests['columnar', 'full', 'none']):,} bytes (uncompressed)",
        flush=True,
    )
    repeats = repeats_for(claims)
    peer_calls = peers()
    for call in peer_calls.values():
        call(frame)  # warm up (imports, caches)
    peer_s = {name: best_of(partial(call, frame), repeats) for name, call in peer_calls.items()}
    mv, mv_cpu = peer_s["majority_vote"]
    assay = Assay()
    usable: dict[Key, bytes] = {}
    for (form, detail, codec), raw in requests.items():
        head = f"peers: form={form} detail={detail} claims={claims}"
        if len(raw) > DEFAULT_MAX_MESSAGE_BYTES:
            print(
                f"{head} skipped=request_over_message_limit request_bytes={len(raw)} "
                f"limit_bytes={DEFAULT_MAX_MESSAGE_BYTES}{_fields(codec)}",
                flush=True,
            )
            continue
        try:
            assay.call(form, raw)  # warm up
        except Exception as error:  # reported; the other forms still run
            reason = f"{type(error).__name__}: {error}".replace("\n", " ")[:200]
            print(f"{head} skipped=error reason={json.dumps(reason)}{_fields(codec)}", flush=True)
            continue
        took, took_cpu = best_of(partial(assay.call, form, raw), repeats)
        print(
            f"{head} assay_s={took:.6f} majority_vote_s={mv:.6f} ratio={took / mv:.3f} "
            f"assay_cpu_s={took_cpu:.6f} majority_vote_cpu_s={mv_cpu:.6f} "
            f"cpu_ratio={took_cpu / mv_cpu:.3f}{_fields(codec)}",
            flush=True,
        )
        usable[form, detail, codec] = raw
    for name in ("wawa", "dawid_skene_10"):
        print(
            f"peers: peer={name} claims={claims} peer_s={peer_s[name][0]:.6f} "
            f"majority_vote_s={mv:.6f} peer_cpu_s={peer_s[name][1]:.6f} "
            f"majority_vote_cpu_s={mv_cpu:.6f}",
            flush=True,
        )
    if memory:
        for (form, detail, codec), raw in usable.items():
            peak, per_claim = memory_of(form, raw, claims)
            print(
                f"peers: memory form={form} detail={detail} claims={claims} "
                f"peak_rss_bytes={peak} bytes_per_claim={per_claim:.0f} "
                f"method=vmhwm-subprocess{_fields(codec)}",
                flush=True,
            )
        peak, per_claim = memory_of("majority_vote", _frame_bytes(frame), claims)
        print(
            f"peers: memory peer=majority_vote claims={claims} peak_rss_bytes={peak} "
            f"bytes_per_claim={per_claim:.0f} method=vmhwm-subprocess",
            flush=True,
        )
    assay.loop.close()


# ---- peak memory, one fresh process per measurement -----------------------------------


def _frame_bytes(frame: Any) -> bytes:
    pa = _module("pyarrow")

    sink = pa.BufferOutputStream()
    table = pa.Table.from_pandas(frame, preserve_index=False)
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def memory_of(what: str, raw: bytes, claims: int) -> tuple[int, float]:
    """(peak RSS of a fresh process over one call, that peak less the RSS before the
    call per claim): the request's bytes go through a private temporary file."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "request.bin"
        path.touch(mode=0o600)
        path.write_bytes(raw)
        done = subprocess.run(
            [sys.executable, __file__, "--memory-child", what, str(path)],
            capture_output=True,
            text=True,
            check=True,
            timeout=3600,
        )
    before, peak = (int(x) for x in done.stdout.split())
    return peak, (peak - before) / claims


def _status_bytes(field: str) -> int:
    """A ``kB`` field of /proc/self/status (VmRSS, VmHWM), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> int:
    """Reset this process's peak RSS to its current RSS; return that."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    return _status_bytes("VmRSS")


def memory_child(what: str, path: str) -> None:
    raw = Path(path).read_bytes()
    if what == "majority_vote":
        pa = _module("pyarrow")
        from crowdkit.aggregation import MajorityVote

        frame = pa.ipc.open_stream(raw).read_all().to_pandas()
        del raw
        MajorityVote().fit_predict(frame)  # warm-up: lazy imports and caches
        gc.collect()
        before = _reset_peak()
        MajorityVote().fit_predict(frame)
    else:
        assay = Assay()
        assay.call(what, raw)  # warm-up: lazy imports and caches
        gc.collect()
        before = _reset_peak()
        assay.call(what, raw)
    print(before, _status_bytes("VmHWM"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--claims", type=int, choices=SIZES, help="one size only")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory subprocesses")
    parser.add_argument("--memory-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        memory_child(*args.memory_child)
        return 0
    for claims in (args.claims,) if args.claims else SIZES:
        measure(claims, not args.no_memory)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Per-service throughput and p99 at a fixed number of calls in flight, beside the no-op RPC.

Not a test: a script (``python bench/service_load.py``) that starts the three services as
real ``assay serve`` processes on 127.0.0.1 (the planner pointed at its own resolver,
adjudication on a fresh SQLite file in a temporary folder) and drives each with
``--in-flight`` concurrent callers (default 200), one phase per kind of call:

- the health ``Check`` on each server: the no-op (grpc's C core and the event loop, none of
  Assay's handler), the baseline every other rate is divided by;
- the resolver's ``ResolveSemantic`` over 10 claims, the planner's ``PlanEvidence`` over
  10 claims (which calls the resolver once), and adjudication's ``GetCaseState`` (a read
  that re-checks the case's records against the ledger) and ``SubmitReview`` (a durable
  write; each case reviewed twice, by a pair of callers, as in real use).

For every phase it prints calls/s, p99 latency, and the server's CPU per call (user +
system of the server process, from /proc); the planner's line also counts its resolver's
CPU. Requests are serialized before the clock starts and responses left as bytes, so the
client spends as little of the shared CPU as possible. Phases are time-bounded
(``--seconds``) except ``SubmitReview``, which sends a fixed ``--reviews`` per phase. Only
calls that succeed count; any that fail (above ``--max-concurrent-rpcs``, 256 by default,
a server refuses the excess with RESOURCE_EXHAUSTED) are shown as ERRORS.

``--against SRC`` serves a second copy of all three from another source tree (a ``src``
folder of an older revision, e.g. a git worktree) through the same interpreter, and runs
the two interleaved, round by round (A B, then B A), so drift in the machine's load hits
both alike; each ratio is taken within a round and shown as the range over the rounds.
Each phase also notes how much CPU *other* processes used meanwhile (from /proc/stat): a
phase where they took more than ``DISTURBED_CORES`` is marked ``*`` as disturbed.

It also prints each server's resident memory once it answers (idle) and after the load.
It never decides pass or fail: the figures are for reading.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness import free_port
from load_phase import DISTURBED_CORES, Phase, Requests, run_phase
from service_fleet import Fleet, rss_mib, start_fleet, stop_fleet

# Kinds of call, in the order they run within a round: (name, server, label).
KINDS = (
    ("noop resolver", "resolver", "health Check on the resolver (no-op)"),
    ("ResolveSemantic", "resolver", "ResolveSemantic, 10 claims"),
    ("noop planner", "planner", "health Check on the planner (no-op)"),
    ("PlanEvidence", "planner", "PlanEvidence, 10 claims"),
    ("noop adjudication", "adjudication", "health Check on adjudication (no-op)"),
    ("GetCaseState", "adjudication", "GetCaseState"),
    ("SubmitReview", "adjudication", "SubmitReview (durable, SQLite)"),
)
NOOP_OF = {name: f"noop {server}" for name, server, _ in KINDS}


@dataclass
class Results:
    """Every phase of one fleet, by kind of call, in round order."""

    fleet: Fleet
    phases: dict[str, list[Phase]] = field(default_factory=dict)


async def bench(fleets: Sequence[Fleet], args: argparse.Namespace) -> list[Results]:
    results = [Results(fleet) for fleet in fleets]
    requests = [
        await Requests.prepare(fleet, args.rounds, args.reviews, args.in_flight) for fleet in fleets
    ]
    for fleet, made in zip(fleets, requests, strict=True):  # warm-up: every path once
        for name, server, _ in KINDS:
            if name != "SubmitReview":
                await run_phase(fleet, server, made, name, args.in_flight, 0.5, 0)
    for round_ in range(args.rounds):
        order = list(zip(results, requests, strict=True))
        if round_ % 2:
            order.reverse()
        for result, made in order:
            for name, server, _ in KINDS:
                found = await run_phase(
                    result.fleet, server, made, name, args.in_flight, args.seconds, round_
                )
                result.phases.setdefault(name, []).append(found)
                print(f"  round {round_ + 1} {result.fleet.label:<12} {found.line(name)}")
    return results


def report(results: list[Results]) -> None:
    print()
    print("Per fleet: best calls/s over the rounds, median p99, median server CPU per call;")
    print("the ratio to the same server's no-op as a range over the rounds")
    for result in results:
        print(f"  {result.fleet.label} ({result.fleet.source}):")
        print(f"    {'':<40} {'calls/s':>8} {'p99 ms':>8} {'CPU us':>7} {'vs no-op':>14}")
        for name, _, label in KINDS:
            runs = result.phases[name]
            noops = result.phases[NOOP_OF[name]]
            ratios = [p.rate / q.rate for p, q in zip(runs, noops, strict=True)]
            best = max(p.rate for p in runs)
            p99 = statistics.median(p.p99 for p in runs) * 1000
            cpu = statistics.median(p.cpu_per_call for p in runs) * 1e6
            span = "" if name.startswith("noop") else f"{min(ratios):.2f}-{max(ratios):.2f}x"
            print(f"    {label:<40} {best:>8,.0f} {p99:>8.1f} {cpu:>7,.0f} {span:>14}")
    for other in results[1:]:
        compare(results[0], other)


def compare(new: Results, old: Results) -> None:
    """``new``'s figures over ``old``'s, round by round; the range over every round, and
    (in brackets) over the rounds where neither side was disturbed."""
    print()
    print(f"{new.fleet.label} / {old.fleet.label}, per round ('*' = a side was disturbed):")
    print(f"    {'':<40} {'calls/s ratio':>32} {'p99 ratio':>19} {'CPU/call ratio':>19}")
    for name, _, label in KINDS:
        pairs = list(zip(new.phases[name], old.phases[name], strict=True))
        marks = "".join("*" if a.disturbed or b.disturbed else "." for a, b in pairs)
        quiet = [(a, b) for a, b in pairs if not (a.disturbed or b.disturbed)]
        rates = _span([a.rate / b.rate for a, b in pairs])
        calm = _span([a.rate / b.rate for a, b in quiet]) if quiet else "-"
        p99s = _span([a.p99 / b.p99 for a, b in pairs])
        cpus = _span([a.cpu_per_call / b.cpu_per_call for a, b in pairs])
        print(f"    {label:<40} {rates:>18} [{calm:>18}] {marks:>6} {p99s:>18} {cpus:>18}")


def _span(ratios: list[float]) -> str:
    """Smallest-largest, and the median in brackets (the steadiest single figure)."""
    return f"{min(ratios):.2f}-{max(ratios):.2f}x ({statistics.median(ratios):.2f})"


def memory(fleets: Sequence[Fleet], when: str) -> None:
    print(f"Resident memory {when} (MiB):")
    for fleet in fleets:
        sizes = ", ".join(f"{name} {rss_mib(p):.1f}" for name, p in fleet.processes.items())
        print(f"  {fleet.label:<12} {sizes}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--in-flight", type=int, default=200, help="concurrent callers")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of a timed phase")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--reviews", type=int, default=2000, help="SubmitReview calls a phase")
    parser.add_argument("--log-level", default="info", help="the servers' (info: as deployed)")
    parser.add_argument(
        "--against",
        metavar="PATH",
        help="also serve with this PYTHONPATH (another revision's src folder, and any"
        " dependency only it needs, joined by ':'), interleaved",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="LABEL=FLAGS",
        help="also serve this tree with these extra `assay serve` flags ({port}: a free port),"
        " e.g. 'metrics=--metrics-port {port}'; repeatable",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.in_flight <= 1000 or not 0 < args.seconds <= 30 or args.rounds > 20:
        parser.error("bounded load only: --in-flight 1-1000, --seconds <= 30, --rounds <= 20")
    if args.reviews < 2 * args.in_flight:
        parser.error("--reviews must be at least twice --in-flight (each case is reviewed twice)")
    sources: list[tuple[str, str | None, list[str]]] = [("this tree", None, [])]
    if args.against:
        sources.append(("against", args.against, []))
    for variant in args.variant:
        label, _, flags = variant.partition("=")
        sources.append((label, None, shlex.split(flags)))
    fleets: list[Fleet] = []
    try:
        for label, source, flags in sources:
            fleets.append(start_fleet(label, source, args.log_level, free_port, flags))
        memory(fleets, "idle, once serving")
        print(
            f"{args.in_flight} calls in flight, {args.rounds} rounds, {args.seconds:g} s a phase;"
            f" '*' marks a phase where other processes used > {DISTURBED_CORES} cores"
        )
        results = asyncio.run(bench(fleets, args))
        memory(fleets, "after the load")
        report(results)
    finally:
        for fleet in fleets:
            stop_fleet(fleet)
    return 0


if __name__ == "__main__":
    sys.exit(main())

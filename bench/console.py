"""Console benchmark: signed-in reviewers working through a queue over real HTTP.

Not a test: ``python bench/console.py`` prints, per page (queue, case, submit, submit -> next
case), p50/p95 as the client sees it and the bytes transferred; beside them the console's own
time and the gRPC time inside it (recorded in the console's process by ``console_timed.py``),
the same calls alone before the load, submits accepted and refused, the static files' gzip
size and each process's CPU. Figures and ratios to the targets, never a verdict.

Setup on loopback: dev credentials with one principal per reviewer, ``assay serve adjudication
--credentials`` (TLS, tokens, SQLite), the cases enqueued in EnqueueCases batches, the console
in its own process (or ``--console in-process``). Each reviewer is an httpx client signed in
through the dev sign-in form and keeping its own cookies (they are Secure, which httpx sends
over https only). ``--think``, ``--queue-every`` and ``--pairs`` (a tenant per pair, so the
reviewers do not all meet at the head of one queue) shape the load.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

import httpx
from approvals import Server, percentile, wait_ready
from harness import free_port

from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.client.credentials import Credentials
from assay.runtime.auth.dev_credentials import Grantee, write_dev_credentials
from assay.runtime.logging import configure_logging
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import gold_pb2

TENANT = "bench"
BATCH = 1000
PAGE_P95_TARGET = 0.050
NEXT_P95_TARGET = 0.100
PAGE_BYTES_TARGET = 100 * 1024
SCRIPT_GZIP_TARGET = 30 * 1024
HERE = Path(__file__).resolve().parent
SIGNIN_TOKEN = re.compile(r'name="signin" value="([^"]+)"')
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
ATTEMPT = re.compile(r'name="attempt" value="([^"]*)"')
LISTED = re.compile(r'href="/review/([^"]+)" data-item')
CHOICES = re.compile(r'name="answer" value="(\d+)"')
HEADLINE = re.compile(r"<h1>(.*?)</h1>", re.S)
Sampler = Callable[[], dict[str, float]]
Pace = tuple[float, int]  # think seconds per case, back to the queue after every N submits


def reviewer_names(count: int) -> list[str]:
    return [f"reviewer-{i:03d}" for i in range(count)]


# --- setup ---------------------------------------------------------------------


def tenants(reviewers: int, pairs: bool) -> list[str]:
    """Each reviewer's tenant: all the one tenant, or (``pairs``) one tenant per pair."""
    return [f"{TENANT}-{i // 2:03d}" if pairs else TENANT for i in range(reviewers)]


def bench_case(i: int, tenant: str) -> adj.Case:
    """A case like the planner enqueues: three candidate values, evidence, some context."""
    case = adj.Case(
        tenant=tenant,
        subject=f"payments-api/v2/charges/endpoint-{i:05d}",
        predicate="idempotency.mode",
        evidence_refs=[f"claim://bench/{i}/openapi", f"claim://bench/{i}/handler"],
        context="The handler stores the Idempotency-Key header's value with the charge; "
        "the OpenAPI document names the header but not what a repeat returns.",
        lineage=adj.CaseLineage(origin="bench", origin_ref=f"bench-{i}"),
    )
    for value in ("key", "none", "header-only"):
        case.candidate_values.add().string_value = value
    case.local_verdict.string_value = "key"
    return case


async def seed(target: str, creds: Path, names: list[str], cases: int, where: list[str]) -> None:
    """The reviewers registered (HUMAN, attested by the operator) and the cases enqueued,
    spread evenly over the tenants ``where`` names (a batch holds one tenant's cases)."""
    operator = Credentials.from_folder(creds, "operator")
    async with AsyncAdjudicationClient(target, timeout=120, credentials=operator) as client:
        await asyncio.gather(
            *(
                client.register_reviewer(
                    adj.RegisterReviewerRequest(
                        reviewer=adj.Reviewer(reviewer_id=n, kind=gold_pb2.REVIEWER_KIND_HUMAN)
                    )
                )
                for n in names
            )
        )
        distinct = sorted(set(where))
        for t, tenant in enumerate(distinct):
            mine = range(t, cases, len(distinct))
            for start in range(0, len(mine), BATCH):
                batch = [bench_case(i, tenant) for i in mine[start : start + BATCH]]
                await client.enqueue_cases(adj.EnqueueCasesRequest(cases=batch))


def console_settings(port: int, target: str, creds: Path) -> dict[str, Any]:
    return {
        "host": "127.0.0.1",
        "port": port,
        "adjudication": target,
        "ca": str(creds / "ca.pem"),
        "dev_credentials": str(creds),
    }


@contextmanager
def console_process(scratch: Path, settings: dict[str, Any]) -> Iterator[tuple[int, Path]]:
    """The timed console in its own process: its pid, and where its records will be."""
    path, records = scratch / "console-settings.json", scratch / "console-records.jsonl"
    path.write_text(json.dumps(settings), encoding="utf-8")
    log = (scratch / "console.log").open("wb")
    command = [sys.executable, str(HERE / "console_timed.py"), str(path), str(records)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
    try:
        yield process.pid, records
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        log.close()


async def calls_alone(target: str, creds: Path, name: str, repeats: int = 30) -> str:
    """The gRPC calls the pages make, one at a time from one reviewer's client before any
    load: ListQueue of 50 (the queue page) and of 1 (after a submit), GetBlindedCase."""
    person = Credentials.from_folder(creds, name)
    async with AsyncAdjudicationClient(target, timeout=60, credentials=person) as client:
        head = await client.list_queue(adj.ListQueueRequest(reviewer_id=name, page_size=1))
        case_id = head.cases[0].case_id
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "ListQueue(50)": lambda: client.list_queue(
                adj.ListQueueRequest(reviewer_id=name, page_size=50)
            ),
            "ListQueue(1)": lambda: client.list_queue(
                adj.ListQueueRequest(reviewer_id=name, page_size=1)
            ),
            "GetBlindedCase": lambda: client.get_blinded_case(
                adj.GetBlindedCaseRequest(case_id=case_id)
            ),
        }
        said = []
        for label, call in calls.items():
            times = []
            for _ in range(repeats):
                started = time.perf_counter()
                await call()
                times.append(time.perf_counter() - started)
            said.append(f"{label} p50 {ms(times, 0.5).strip()} / min {min(times) * 1e3:.1f} ms")
    return f"  the pages' gRPC calls alone (one client, no load, {repeats} each): " + ", ".join(
        said
    )


async def wait_console(base: str) -> None:
    deadline = time.monotonic() + 30
    async with httpx.AsyncClient(base_url=base, timeout=5) as client:
        while True:
            try:
                if (await client.get("/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the console did not start (see its log)")
            await asyncio.sleep(0.1)  # a starting process: nothing to wait on but time


# --- the reviewers -------------------------------------------------------------


@dataclass
class Seen:
    """What the clients measured in the window: seconds and bytes by page."""

    start: float
    end: float
    think: float
    queue_every: int
    seconds: dict[str, list[float]] = field(default_factory=dict)
    sizes: dict[str, list[int]] = field(default_factory=dict)
    submits: Counter[int] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    emptied: int = 0
    cpu_start: dict[str, float] = field(default_factory=dict)
    cpu_end: dict[str, float] = field(default_factory=dict)
    load: float = 0.0

    def add(self, page: str, at: float, seconds: float, size: int) -> None:
        if self.start <= at <= self.end:
            self.seconds.setdefault(page, []).append(seconds)
            self.sizes.setdefault(page, []).append(size)


def transferred(response: httpx.Response) -> int:
    """Bytes on the wire: the status line, the headers and the body as received."""
    head = len(b"HTTP/1.1 000 \r\n\r\n") + len(response.reason_phrase)
    head += sum(len(k) + len(v) + 4 for k, v in response.headers.raw)
    return head + response.num_bytes_downloaded


class Browser:
    """One reviewer's HTTP client, keeping the console's cookies itself (they are Secure,
    which httpx returns over https only)."""

    def __init__(self, base: str) -> None:
        self.http = httpx.AsyncClient(base_url=base, timeout=60, follow_redirects=False)
        self.cookies: dict[str, str] = {}

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        header = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        response = await self.http.request(method, path, headers={"cookie": header}, **kwargs)
        for line in response.headers.get_list("set-cookie"):
            name, _, rest = line.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response

    async def sign_in(self, name: str) -> None:
        form = await self.request("GET", "/signin?next=/review")
        found = SIGNIN_TOKEN.search(form.text)
        assert found, "no sign-in form token on /signin"
        data = {"name": name, "next": "/review", "signin": found.group(1)}
        answer = await self.request("POST", "/signin/dev", data=data)
        if answer.status_code != 303 or "__Host-assay" not in self.cookies:
            raise SystemExit(f"{name} could not sign in: {answer.status_code} {answer.text}")


async def timed(
    browser: Browser, seen: Seen, page: str, method: str, path: str, **kwargs: Any
) -> httpx.Response:
    at = time.perf_counter()
    response = await browser.request(method, path, **kwargs)
    seen.add(page, at, time.perf_counter() - at, transferred(response))
    return response


async def work(browser: Browser, seen: Seen, rng: random.Random) -> None:
    """The queue, its first case, then submit and follow the redirect until refused (back to
    the queue; also after every ``queue_every`` accepted submits), the queue is empty, or the
    window ends."""
    accepted = 0
    while time.perf_counter() < seen.end:
        queue = await timed(browser, seen, "queue", "GET", "/review")
        listed = LISTED.findall(queue.text)
        if not listed:
            seen.emptied += 1
            return
        page = await timed(browser, seen, "case", "GET", f"/review/{listed[0]}")
        path = f"/review/{listed[0]}"
        while time.perf_counter() < seen.end:
            if seen.think:  # reading the case: uneven, so people do not move in step
                await asyncio.sleep(seen.think * rng.uniform(0.5, 1.5))
            csrf, attempt = CSRF.search(page.text), ATTEMPT.search(page.text)
            choices = CHOICES.findall(page.text)
            if page.status_code != 200 or not (csrf and attempt and choices):
                break
            form = {"csrf": csrf.group(1), "attempt": attempt.group(1)}
            form["answer"], form["reason"] = rng.choice(choices), ""
            started = time.perf_counter()
            answer = await timed(browser, seen, "submit", "POST", path, data=form)
            counted = seen.start <= started <= seen.end
            if counted:
                seen.submits[answer.status_code] += 1
            if answer.status_code != 303:
                said = HEADLINE.search(answer.text)
                if counted:
                    seen.refusals[said.group(1).strip() if said else str(answer.status_code)] += 1
                break
            path = answer.headers["location"]
            if not path.startswith("/review/"):
                seen.emptied += 1
                return
            page = await timed(browser, seen, "case", "GET", path)
            seen.add("next", started, time.perf_counter() - started, 0)
            accepted += 1
            if seen.queue_every and accepted % seen.queue_every == 0:
                break  # a look at the queue, then its first case


async def reviewers(
    base: str, names: list[str], warmup: float, seconds: float, pace: Pace, sample: Sampler
) -> Seen:
    """Every reviewer signed in, then working until the window ends; ``sample`` (CPU by
    process) is read as the window opens and as it closes."""
    browsers = [Browser(base) for _ in names]
    try:
        await asyncio.gather(*(b.sign_in(n) for b, n in zip(browsers, names, strict=True)))
        now = time.perf_counter()
        seen = Seen(now + warmup, now + warmup + seconds, *pace)

        async def cpu() -> None:
            await asyncio.sleep(warmup)
            seen.cpu_start = sample()
            await asyncio.sleep(seconds)
            seen.cpu_end = sample()
            seen.load = os.getloadavg()[0]

        rngs = [random.Random(i) for i in range(len(names))]
        await asyncio.gather(
            cpu(), *(work(b, seen, r) for b, r in zip(browsers, rngs, strict=True))
        )
        return seen
    finally:
        for browser in browsers:
            await browser.http.aclose()


# --- the console's own records -------------------------------------------------

ROUTES = {
    ("GET", "/review"): "queue",
    ("GET", "/review/{case_id}"): "case",
    ("POST", "/review/{case_id}"): "submit",
}


def server_side(records: list[dict[str, Any]], start: float, end: float) -> dict[str, Any]:
    """By page: the console's time, the gRPC time inside it, and the calls made."""
    found: dict[str, Any] = {"rpc": {}}
    for record in records:
        page = ROUTES.get((record["method"], record["route"]))
        if page is None or not start <= record["at"] <= end:
            continue
        for method, seconds in record["grpc"]:
            found["rpc"].setdefault(f"{method} ({page})", []).append(seconds)
        mine = found.setdefault(page, {"total": [], "grpc": [], "own": [], "calls": Counter()})
        spent = sum(s for _, s in record["grpc"])
        mine["total"].append(record["seconds"])
        mine["grpc"].append(spent)
        mine["own"].append(record["seconds"] - spent)
        mine["calls"][" + ".join(m for m, _ in record["grpc"])] += 1
    return found


# --- CPU per process -----------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far, from /proc (0 where there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- report --------------------------------------------------------------------


def ms(values: list[float], share: float) -> str:
    return f"{percentile(values, share) * 1e3:7.1f}" if values else "    n/a"


def report(
    seen: Seen, side: dict[str, Any], cpu: dict[str, float], window: float, where: str
) -> None:
    print(
        f"\nmeasured window: {window:.0f} s; console {where}; think time {seen.think:g} s"
        " per case (0.5-1.5x); the queue page after "
        + (f"every {seen.queue_every} accepted submits" if seen.queue_every else "a refusal")
    )
    print("  as the clients see it (client send -> body read), and bytes transferred:")
    print("    page                  n      p50 ms  p95 ms   p95/target   bytes p50   max")
    for page, target in (("queue", PAGE_P95_TARGET), ("case", PAGE_P95_TARGET),
                         ("submit", PAGE_P95_TARGET), ("next", NEXT_P95_TARGET)):  # fmt: skip
        values = seen.seconds.get(page, [])
        sizes = seen.sizes.get(page, [])
        label = {"next": "submit -> next case"}.get(page, page)
        ratio = percentile(values, 0.95) / target if values else float("nan")
        size = (f"{int(percentile([float(n) for n in sizes], 0.5)):9,d} {max(sizes):7,d}"
                if sizes and page != "next" else "")  # fmt: skip
        print(f"    {label:20} {len(values):6,d} {ms(values, 0.5)} {ms(values, 0.95)}"
              f"   {ratio:9.2f}   {size}")  # fmt: skip
    largest = max((max(s) for p, s in seen.sizes.items() if p != "next"), default=0)
    print(f"    largest page {largest:,} bytes = {largest / PAGE_BYTES_TARGET:.2f} of 100 KB")
    total = sum(seen.submits.values())
    accepted = seen.submits.get(303, 0)
    print(f"  submits: {total:,} ({total / window:,.1f}/s), {accepted:,} accepted (303 to the"
          f" next case) = {accepted / max(total, 1):.1%}")  # fmt: skip
    for said, count in seen.refusals.most_common():
        print(f"    refused {count:,}x: {said}")
    if seen.emptied:
        print(f"  {seen.emptied} reviewers found their queue empty")
    print("  in the console's process (application time; gRPC time inside it; the difference):")
    print("    page        n     total p50/p95 ms    gRPC p50/p95 ms   own p50/p95 ms   calls")
    for page in ("queue", "case", "submit"):
        mine = side.get(page)
        if mine is None:
            continue
        calls = ", ".join(f"{c or '(none)'} x{n}" for c, n in mine["calls"].most_common(3))
        print(f"    {page:8} {len(mine['total']):6,d}   {ms(mine['total'], 0.5)} "
              f"{ms(mine['total'], 0.95)}   {ms(mine['grpc'], 0.5)} {ms(mine['grpc'], 0.95)}"
              f"  {ms(mine['own'], 0.5)} {ms(mine['own'], 0.95)}   {calls}")  # fmt: skip
    print("    each gRPC call (on which page), as the console waited for it: " + ", ".join(
        f"{m} p50 {ms(t, 0.5).strip()} / p95 {ms(t, 0.95).strip()} ms (n {len(t):,})"
        for m, t in sorted(side["rpc"].items())
    ))  # fmt: skip
    print("  CPU over the window, in cores: " + ", ".join(
        f"{name} {seconds / window:.2f}" for name, seconds in cpu.items()
    ) + f"; the machine's load average (1 min) at the end: {seen.load:.1f}")  # fmt: skip


async def static_weight(base: str) -> str:
    """The script and stylesheet each page loads: as served, and gzip-compressed."""
    static = resources.files("assay.console") / "static"
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        served = gz = 0
        parts = []
        for name in ("console.js", "console.css"):
            response = await client.get(f"/static/{name}")
            data = (static / name).read_bytes()
            size = len(gzip.compress(data, 9))
            served += transferred(response)
            gz += size
            parts.append(f"{name} {len(data):,} B, gzip -9 {size:,} B")
            cache = response.headers.get("cache-control", "")
            encoding = response.headers.get("content-encoding", "none")
    return (f"  static: {'; '.join(parts)}; together {gz:,} B gzip = {gz / SCRIPT_GZIP_TARGET:.2f}"
            f" of 30 KB; served {served:,} B with headers per view (content-encoding {encoding},"
            f" cache-control {cache})")  # fmt: skip


# --- main ----------------------------------------------------------------------


async def run_in_process(
    settings: dict[str, Any],
    names: list[str],
    warmup: float,
    seconds: float,
    pace: Pace,
    sample: Sampler,
    log: TextIO,
) -> tuple[Seen, list[dict[str, Any]], str]:
    """The console on this loop, beside the clients (one interpreter, one GIL for both)."""
    import console_timed
    import grpc

    from assay.console import server as console_server

    grpc.aio.secure_channel = console_timed.with_timer(grpc.aio.secure_channel)
    configure_logging("info", log)  # as in its own process: a line per request, not shown
    records: list[dict[str, Any]] = []
    running = console_server.server(console_timed.settings_from(settings), grace=2.0)
    running.config.app = console_timed.Timed(running.config.app, records)
    running.config.load()
    sock = console_server.bind("127.0.0.1", settings["port"])
    task = asyncio.create_task(running.serve(sockets=[sock]))
    try:
        base = f"http://127.0.0.1:{settings['port']}"
        await wait_console(base)
        seen = await reviewers(base, names, warmup, seconds, pace, sample)
        return seen, records, await static_weight(base)
    finally:
        running.should_exit = True
        await task


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="queued cases of the tenant")
    parser.add_argument("--reviewers", type=int, default=50, help="concurrent signed-in people")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds before the window")
    parser.add_argument("--pairs", action="store_true",
                        help="a tenant per pair of reviewers (the cases spread evenly), so no"
                        " two pairs meet on a case")  # fmt: skip
    parser.add_argument(
        "--calls-only",
        action="store_true",
        help="time the pages' gRPC calls alone after the setup, then stop",
    )
    parser.add_argument("--queue-every", type=int, default=0, metavar="N",
                        help="back to the queue page after every N accepted submits"
                        " (default 0: only after a refusal)")  # fmt: skip
    parser.add_argument("--think", type=float, default=0.0,
                        help="mean seconds a reviewer reads a case before submitting"
                        " (0: none, the console saturated)")  # fmt: skip
    parser.add_argument("--console", choices=("process", "in-process"), default="process",
                        help="its own process, or this process's loop")  # fmt: skip
    args = parser.parse_args()
    if not 1 <= args.reviewers <= 1000 or args.cases < 1 or args.seconds <= 0:
        parser.error("--reviewers 1-1000, --cases >= 1, --seconds > 0")
    names = reviewer_names(args.reviewers)
    pace = (args.think, args.queue_every)
    with tempfile.TemporaryDirectory(prefix="assay-bench-console-") as tmp:
        scratch = Path(tmp)
        started = time.perf_counter()
        homes = tenants(args.reviewers, args.pairs)
        principals = [Grantee("operator", ("operator", "reader"), ("*",))]
        principals += [
            Grantee(n, ("reviewer", "reader"), (t,)) for n, t in zip(names, homes, strict=True)
        ]
        creds = write_dev_credentials(scratch / "creds", principals).root
        server = Server(creds, str(scratch / "console.db"))
        try:
            asyncio.run(wait_ready(creds, server.target))
            asyncio.run(seed(server.target, creds, names, args.cases, homes))
            layout = (f"{len(set(homes))} tenants, one per pair of reviewers" if args.pairs
                      else f"one tenant {TENANT!r}")  # fmt: skip
            print(f"setup: {args.reviewers} reviewer principals, {args.cases:,} cases ({layout})"
                  f" enqueued in batches of up to {BATCH:,}; adjudication over TLS with"
                  f" tokens on a SQLite file; {time.perf_counter() - started:.1f} s")  # fmt: skip
            print(asyncio.run(calls_alone(server.target, creds, names[0])))
            if args.calls_only:
                return 0
            settings = console_settings(free_port(), server.target, creds)
            base = f"http://127.0.0.1:{settings['port']}"
            if args.console == "in-process":
                where = "in this process, on the clients' loop"

                def sample() -> dict[str, float]:
                    return {"adjudication": cpu_seconds(server.process.pid),
                            "clients+console": time.process_time()}  # fmt: skip

                with (scratch / "console.log").open("w", encoding="utf-8") as log:
                    seen, records, weight = asyncio.run(
                        run_in_process(
                            settings, names, args.warmup, args.seconds, pace, sample, log
                        )
                    )
            else:
                where = "in its own process"
                with console_process(scratch, settings) as (pid, path):

                    def sample() -> dict[str, float]:
                        return {"adjudication": cpu_seconds(server.process.pid),
                                "console": cpu_seconds(pid),
                                "clients": time.process_time()}  # fmt: skip

                    asyncio.run(wait_console(base))
                    seen = asyncio.run(
                        reviewers(base, names, args.warmup, args.seconds, pace, sample)
                    )
                    weight = asyncio.run(static_weight(base))
                records = [json.loads(line) for line in path.read_text().splitlines()]
            # The clients' clock is perf_counter, the records' time.time(): the window in both.
            offset = time.time() - time.perf_counter()
        finally:
            server.stop()
    side = server_side(records, seen.start + offset, seen.end + offset)
    cpu = {n: seen.cpu_end[n] - seen.cpu_start[n] for n in seen.cpu_end}
    report(seen, side, cpu, args.seconds, where)
    print(weight)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("ASSAY_LOG_LEVEL", "warning")
    sys.exit(main())

"""Does calibrating the reliability table from gold labels pay? A simulation.

Not a test: ``python bench/calibration.py [--quick] [--seed S] [--shift-only]`` runs the real
calibration and the real resolver rules (``plain_claims.resolve_all``) over seeded worlds.
In a world six source kinds are truly right with their declared reliability moved ±0.2
(a coin each, jittered by up to 0.05), except ``runtime_trace``, declared 0.9 and right
half the time (``--shift-only``: ±0.2 too). A semantic has one true value of three and 1-4
claims from distinct kinds, each the truth with its kind's true reliability, else a wrong
value; confidence 1 and one correlation group per claim, so a claim's weight is its kind's
reliability. Printed beside baselines from the same run, never pass/fail: held-out
accuracy, Brier score and ECE with the declared table, tables proposed from N = 50, 200 and
1,000 spot-checked labels, conflict-only and crowd-kit OneCoinDawidSkene tables, and the
true table; each estimator's error, Assay's beside GoldMajorityVote's; 95% interval
coverage at n = 10, 30, 100 labels per kind; the time to calibrate 100,000 claims.
"""

from __future__ import annotations

import argparse
import importlib
import random
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assay.services.adjudication.domain.calibration import (
    CalibrationReport,
    LabelOrigin,
    Observation,
    calibrate,
)
from assay.services.adjudication.domain.calibration_figures import FigureStatus
from assay.services.adjudication.domain.calibration_proposal import (
    Checkpoint,
    propose,
    render_proposal,
)
from assay.services.adjudication.domain.model import Provenance
from assay.services.resolver.domain.model import Resolution, Status
from assay.services.resolver.domain.plain_claims import PlainClaim, resolve_all
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY, Policy


def _module(name: str) -> Any:
    """A benchmark-only library without type stubs (pandas, crowd-kit), untyped."""
    return importlib.import_module(name)


SOURCES = (
    "runtime_trace",
    "api_spec",
    "test_result",
    "static_analysis",
    "documentation",
    "llm_inference",
)
HALF_RIGHT = "runtime_trace"
VALUES = ("a", "b", "c")
SHIFT = 0.2
JITTER = 0.05
LABEL_COUNTS = (50, 200, 1_000)
COVERAGE_COUNTS = (10, 30, 100)
STRATA_RATES = (0.05, 0.25)
HUMAN = Provenance.HUMAN_ADJUDICATED
SPOT = LabelOrigin.SPOT_CHECK
CHECKPOINT = Checkpoint(tree_size=0)
Table = dict[str, float]


@dataclass(frozen=True, slots=True)
class Semantic:
    subject: str
    truth: str
    claims: tuple[tuple[str, str], ...]  # (source kind, asserted value)


def true_table(rng: random.Random) -> Table:
    """The world's true reliabilities: the declared ones off by about ±0.2."""
    out: Table = {}
    for kind in SOURCES:
        jitter = rng.uniform(-JITTER, JITTER)
        if kind == HALF_RIGHT:
            out[kind] = 0.5 + jitter
            continue
        moved = DEFAULT_RELIABILITY[kind] + rng.choice((-SHIFT, SHIFT)) + jitter
        out[kind] = min(0.97, max(0.05, moved))
    return out


def semantics(rng: random.Random, truth: Table, count: int, prefix: str) -> list[Semantic]:
    out = []
    for i in range(count):
        value = rng.choice(VALUES)
        claims = []
        for kind in rng.sample(SOURCES, rng.randint(1, 4)):
            right = rng.random() < truth[kind]
            claims.append((kind, value if right else rng.choice([v for v in VALUES if v != value])))
        out.append(Semantic(f"{prefix}{i:06d}", value, tuple(claims)))
    return out


def policy_of(table: Mapping[str, float]) -> Policy:
    return Policy(reliability={**DEFAULT_RELIABILITY, **table})


def resolve(pool: Sequence[Semantic], table: Mapping[str, float]) -> dict[str, Resolution]:
    claims = [
        PlainClaim(s.subject, "effect.kind", value, kind, 1.0, source_ref=f"{s.subject}/{j}")
        for s in pool
        for j, (kind, value) in enumerate(s.claims)
    ]
    return {r.sem[0]: r for r in resolve_all(claims, policy_of(table))}


@dataclass(frozen=True, slots=True)
class Score:
    accuracy: float
    brier: float
    ece: float


def score(pool: Sequence[Semantic], table: Mapping[str, float]) -> Score:
    """Accuracy of the leader, and Brier score and ECE (10 bins) of its support."""
    found = resolve(pool, table)
    pairs = []
    for s in pool:
        leader = found[s.subject].leader
        assert leader is not None
        pairs.append((leader.support, float(leader.value_key == f'"{s.truth}"')))
    n = len(pairs)
    bins: dict[int, list[tuple[float, float]]] = {}
    for p, y in pairs:
        bins.setdefault(min(9, int(p * 10)), []).append((p, y))
    ece = sum(
        abs(sum(p for p, _ in b) - sum(y for _, y in b)) / n for b in bins.values()
    )  # Σ share × |mean forecast - mean outcome|
    return Score(sum(y for _, y in pairs) / n, sum((p - y) ** 2 for p, y in pairs) / n, ece)


def observed(chosen: Sequence[Semantic], origin: LabelOrigin, rate: float) -> list[Observation]:
    return [
        Observation(f"{origin.value}:{s.subject}", kind, value == s.truth, HUMAN, origin, rate)
        for s in chosen
        for kind, value in s.claims
    ]


def spot_checks(rng: random.Random, frame: Sequence[Semantic], labels: int) -> list[Observation]:
    """``labels`` semantics drawn at random from ``frame``, each claim checked."""
    return observed(rng.sample(list(frame), labels), SPOT, labels / len(frame))


def estimates(report: CalibrationReport, figure: str) -> Table:
    """Each kind's point estimate of one figure (spot_check / conflict_only), when ESTIMATED."""
    out: Table = {}
    for found in report.sources:
        f = getattr(found, figure)
        if found.source in SOURCES and f.status is FigureStatus.ESTIMATED:
            out[found.source] = f.estimate
    return out


def posterior_table(report: CalibrationReport, figure: str) -> Table:
    """A table from a figure's posterior means (where ESTIMATED), the declared value elsewhere."""
    out: Table = {}
    for found in report.sources:
        f = getattr(found, figure)
        if found.source in SOURCES:
            ok = f.status is FigureStatus.ESTIMATED and f.posterior_mean is not None
            out[found.source] = f.posterior_mean if ok else found.declared
    return out


def crowd_frame(pool: Sequence[Semantic]) -> Any:
    pd = _module("pandas")
    rows = [(s.subject, kind, value) for s in pool for kind, value in s.claims]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def gold_skills(pool: Sequence[Semantic]) -> Table:
    """crowd-kit's GoldMajorityVote skill per source kind over the labelled semantics."""
    pd = _module("pandas")
    crowd = _module("crowdkit.aggregation")
    truth = pd.Series({s.subject: s.truth for s in pool})
    skills = crowd.GoldMajorityVote().fit(crowd_frame(pool), truth).skills_
    return {str(k): float(v) for k, v in skills.items()}


def dawid_skene_skills(pool: Sequence[Semantic]) -> Table:
    """crowd-kit's OneCoinDawidSkene skill per source kind, no gold used."""
    crowd = _module("crowdkit.aggregation")
    skills = crowd.OneCoinDawidSkene(n_iter=100).fit(crowd_frame(pool)).skills_
    return {str(k): min(1.0, max(0.0, float(v))) for k, v in skills.items()}


Rows = dict[str, list[Score]]
Errors = dict[str, list[float]]


def play_world(seed: int, pool_size: int, rows: Rows, errors: Errors, changed: Errors) -> None:
    """One world: calibrate from its production pool, score every table on held-out."""
    rng = random.Random(seed)
    truth = true_table(rng)
    declared = {k: DEFAULT_RELIABILITY[k] for k in SOURCES}
    production = semantics(rng, truth, pool_size, f"w{seed}/p")
    held_out = semantics(rng, truth, pool_size, f"w{seed}/h")
    statuses = resolve(production, declared)
    conflicted = [s for s in production if statuses[s.subject].status is Status.CONFLICTED]
    resolved = [s for s in production if statuses[s.subject].status is Status.RESOLVED]
    tables: dict[str, Table] = {"declared table": declared}
    for labels in LABEL_COUNTS:
        spot = spot_checks(rng, production, labels)
        raised = observed(conflicted[:labels], LabelOrigin.CONFLICT, 1.0)
        report = calibrate(spot + raised, DEFAULT_RELIABILITY)
        proposal = propose(report, CHECKPOINT)
        tables[f"calibrated, N={labels:,}"] = {k: proposal.table[k] for k in SOURCES}
        changed[f"N={labels:,}"].append(len(proposal.changed))
        if labels == LABEL_COUNTS[-1]:
            tables[f"conflict-only, N={labels:,}"] = posterior_table(report, "conflict_only")
            chosen = {o.label_id.partition(":")[2] for o in spot}
            gold = gold_skills([s for s in production if s.subject in chosen])
            _errors(errors, "Assay spot-check estimate", estimates(report, "spot_check"), truth)
            _errors(errors, "Assay posterior mean", posterior_table(report, "spot_check"), truth)
            _errors(errors, "crowd-kit GoldMajorityVote", gold, truth)
            assay = estimates(report, "spot_check")
            errors["|Assay - GoldMajorityVote|"].extend(abs(assay[k] - gold[k]) for k in assay)
            _errors(errors, "conflict-only estimate", estimates(report, "conflict_only"), truth)
            frame_report = calibrate(spot_checks(rng, resolved, labels), DEFAULT_RELIABILITY)
            _errors(
                errors, "spot-checks of RESOLVED only", estimates(frame_report, "spot_check"), truth
            )
    skills = dawid_skene_skills(production)
    _errors(errors, "crowd-kit OneCoinDawidSkene (no gold)", skills, truth)
    tables["crowd-kit OneCoinDawidSkene table"] = skills
    tables["true table (oracle)"] = truth
    for name, table in tables.items():
        rows.setdefault(name, []).append(score(held_out, table))


def _errors(errors: Errors, name: str, found: Mapping[str, float], truth: Table) -> None:
    errors.setdefault(name, []).extend(found[k] - truth[k] for k in SOURCES if k in found)


def coverage(
    worlds: range, draw: Callable[[random.Random, float], list[Observation]]
) -> tuple[float, float, int]:
    """(share of 95% intervals holding the true reliability, mean width, intervals)."""
    held = total = 0
    width = 0.0
    for seed in worlds:
        rng = random.Random(f"coverage/{seed}")
        truth = true_table(rng)
        seen: list[Observation] = []
        for kind in SOURCES:
            seen += [
                Observation(o.label_id, kind, o.matched, HUMAN, o.origin, o.sampling_rate)
                for o in draw(rng, truth[kind])
            ]
        for found in calibrate(seen, DEFAULT_RELIABILITY).sources:
            f = found.spot_check
            if found.source not in SOURCES or f.low is None or f.high is None:
                continue
            total += 1
            held += f.low <= truth[found.source] <= f.high
            width += f.high - f.low
    return held / total, width / total, total


def plain_draw(count: int) -> Callable[[random.Random, float], list[Observation]]:
    def draw(rng: random.Random, p: float) -> list[Observation]:
        tag = rng.random()
        return [
            Observation(f"{tag}/{i}", "", rng.random() < p, HUMAN, SPOT, 0.1) for i in range(count)
        ]

    return draw


def strata_draw(count: int) -> Callable[[random.Random, float], list[Observation]]:
    """Half the population is easy (p + d), half hard (p - d), sampled at different rates."""
    low, high = STRATA_RATES

    def draw(rng: random.Random, p: float) -> list[Observation]:
        d = min(p, 1 - p, 0.2)
        tag = rng.random()
        out = []
        for i in range(count):
            easy = rng.random() < high / (low + high)  # the easy half is sampled at 25%
            rate, chance = (high, p + d) if easy else (low, p - d)
            out.append(Observation(f"{tag}/{i}", "", rng.random() < chance, HUMAN, SPOT, rate))
        return out

    return draw


def timing(claims: int, repeats: int) -> None:
    """Calibrate ``claims`` gold-checked claims (spot-checks at two rates and conflicts)."""
    rng = random.Random(7)
    truth = true_table(rng)
    seen = []
    for i in range(claims):
        kind = SOURCES[i % len(SOURCES)]
        label = i // 3
        origin = LabelOrigin.CONFLICT if label % 4 == 0 else SPOT
        rate = 1.0 if origin is LabelOrigin.CONFLICT else STRATA_RATES[label % 2]
        seen.append(Observation(f"l{label}", kind, rng.random() < truth[kind], HUMAN, origin, rate))

    def run() -> bytes:
        return render_proposal(propose(calibrate(seen, DEFAULT_RELIABILITY), CHECKPOINT))

    run()  # the first interval imports SciPy
    took = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        took.append(time.perf_counter() - started)
    pd = _module("pandas")
    crowd = _module("crowdkit.aggregation")
    spot = [o for o in seen if o.origin is SPOT]
    frame = pd.DataFrame(
        {
            "task": [o.label_id + "/" + o.source for o in spot],
            "worker": [o.source for o in spot],
            "label": [int(o.matched) for o in spot],
            "weight": [1.0 / o.sampling_rate for o in spot],
        }
    )
    gold = pd.Series(1, index=frame["task"].unique())
    peer = []
    for _ in range(repeats):
        started = time.perf_counter()
        skills = crowd.GoldMajorityVote().fit(frame, gold).skills_
        peer.append(time.perf_counter() - started)
    report = calibrate(seen, DEFAULT_RELIABILITY)
    diff = max(abs(estimates(report, "spot_check")[k] - float(skills[k])) for k in SOURCES)
    print(f"\n== calibrating {claims:,} gold-checked claims, {repeats} repeats ==")
    print(f"Assay calibrate + propose + render: best {min(took):.3f} s, "
          f"median {statistics.median(took):.3f} s")  # fmt: skip
    print(f"crowd-kit GoldMajorityVote fit (weighted, spot-checks only, DataFrame ready): "
          f"best {min(peer):.3f} s, median {statistics.median(peer):.3f} s; "
          f"Assay / GoldMajorityVote (best) = {min(took) / min(peer):.2f}")  # fmt: skip
    print(f"largest |Assay weighted estimate - GoldMajorityVote weighted skill| = {diff:.2e}")


def main(worlds: int, pool_size: int, coverage_worlds: int, timed_claims: int, seed: int) -> None:
    """``seed`` picks which worlds: world seeds start at ``seed × worlds`` (likewise coverage)."""
    rows: Rows = {}
    errors: Errors = {"|Assay - GoldMajorityVote|": []}
    changed: Errors = {f"N={n:,}": [] for n in LABEL_COUNTS}
    started = time.perf_counter()
    for world in range(seed * worlds, (seed + 1) * worlds):
        play_world(world, pool_size, rows, errors, changed)
    shape = f"{HALF_RIGHT} right half the time, " if HALF_RIGHT else ""
    print(f"== seed {seed}: {shape}the rest off by ±{SHIFT}: {worlds} worlds, "
          f"{pool_size:,} production + {pool_size:,} held-out semantics each "
          f"({time.perf_counter() - started:.0f} s) ==")  # fmt: skip
    base = statistics.mean(s.brier for s in rows["declared table"])
    base_accuracy = statistics.mean(s.accuracy for s in rows["declared table"])
    oracle_accuracy = statistics.mean(s.accuracy for s in rows["true table (oracle)"])
    print(f"{'table':<36}{'accuracy':>9}{'worlds range':>15}{'- declared':>11}{'- oracle':>10}"
          f"{'Brier':>8}{'/ declared':>11}{'ECE':>8}")  # fmt: skip
    for name, scores in rows.items():
        acc = [s.accuracy for s in scores]
        brier = statistics.mean(s.brier for s in scores)
        print(
            f"{name:<36}{statistics.mean(acc):>9.2%}"
            f"{f'{min(acc):.1%}-{max(acc):.1%}':>15}"
            f"{(statistics.mean(acc) - base_accuracy) * 100:>+10.2f}p"
            f"{(statistics.mean(acc) - oracle_accuracy) * 100:>+9.2f}p"
            f"{brier:>8.4f}{brier / base:>11.3f}{statistics.mean(s.ece for s in scores):>8.4f}"
        )
    for name, counts in changed.items():
        print(f"entries a proposal changed at {name}: mean {statistics.mean(counts):.1f} "
              f"of {len(SOURCES)}")  # fmt: skip
    print(f"\n== estimates against the true reliabilities, N={LABEL_COUNTS[-1]:,} labels ==")
    print(f"{'estimator':<40}{'mean |error|':>13}{'mean error':>12}{'kinds':>7}")
    for name, found in errors.items():
        if name.startswith("|"):
            continue
        mae = statistics.mean(abs(e) for e in found)
        print(f"{name:<40}{mae:>13.4f}{statistics.mean(found):>+12.4f}{len(found):>7}")
    print(f"largest |Assay estimate - GoldMajorityVote skill| on the same labels: "
          f"{max(errors['|Assay - GoldMajorityVote|']):.2e}")  # fmt: skip

    print(f"\n== 95% interval coverage of the true reliability, {coverage_worlds} worlds ==")
    print(f"{'labels per source kind':<40}{'coverage':>9}{'mean width':>12}{'intervals':>11}")
    draws = [(f"{n}", plain_draw(n)) for n in COVERAGE_COUNTS]
    draws.append(("100, two strata sampled at 5% / 25%", strata_draw(100)))
    for name, draw in draws:
        chosen = range(seed * coverage_worlds, (seed + 1) * coverage_worlds)
        share, width, total = coverage(chosen, draw)
        print(f"{name:<40}{share:>9.2%}{width:>12.3f}{total:>11}")
    timing(timed_claims, 5)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, smaller worlds")
    parser.add_argument("--worlds", type=int, help="worlds scored (default 12, quick 3)")
    parser.add_argument("--pool", type=int, help="semantics per pool (default 10,000, quick 4,000)")
    parser.add_argument("--coverage-worlds", type=int, help="(default 1,000, quick 200)")
    parser.add_argument("--claims", type=int, default=100_000, help="claims timed")
    parser.add_argument("--seed", type=int, default=0, help="which worlds (runs differ by seed)")
    parser.add_argument(
        "--shift-only",
        action="store_true",
        help=f"every kind off by ±{SHIFT}, {HALF_RIGHT} too (not right half the time)",
    )
    args = parser.parse_args()
    quick = args.quick
    if args.shift_only:
        HALF_RIGHT = ""
    main(
        args.worlds or (3 if quick else 12),
        args.pool or (4_000 if quick else 10_000),
        args.coverage_worlds or (200 if quick else 1_000),
        args.claims,
        args.seed,
    )

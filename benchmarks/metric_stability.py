"""Is a throughput figure stable enough to gate on? The same build run N times, and a planted
slowdown that must be found (issue 29 item 2).

Runs the real CLI (``python -m repro run --no-doctor``, the CPU dataloader cases by default) N
times as it is and N times with the dataset's planted slowdown (``$REPRO_DATALOADER_SLOWDOWN``,
the dataset doing its work that many times per sample; no case id changes), alternating, so a
change of the machine's load falls on both alike. Then ``repro compare`` (its functions, the
default 20 % threshold):

- every pair of the plain runs, both ways (N(N-1)/2 pairs): each throughput drop counted (of
  ``steady_it_per_s`` or ``steady_it_per_cpu_s``) is a false alarm; what is past the threshold
  but not counted (within the runs' spread, or a wall-clock drop whose per-CPU-second twin held:
  the run got less CPU) is counted apart;
- every plain run against every slowed run (N x N pairs): each case without a counted drop is a
  miss.

With ``--rounds N`` each run is ``repro run --rounds N``: every case measured in N rounds, each
in its own process, combined into the run's figure (``repro.runner.repeat``), so one run
carries the spread between processes. With ``--per-side K`` a side is K consecutive runs of one kind pooled (``repro compare BASE
--base-run ... --cand-run ...``, ``repro.report.sides.pool``), so the spread between runs is
weighed: ``--runs`` runs of each kind make ``--runs / K`` sides of each kind, compared as above.

Prints each run's figures per case (median ±spread over 5 windows per round), the wall and CPU seconds of
each run, both counts, and how far each figure moved between runs of the same build and with
the planted slowdown. Exit status 1 on a false alarm or a miss.

    python benchmarks/metric_stability.py [--runs 5] [--rounds 1] [--per-side 1] [--slowdown 2]
        [-k PATTERN ...] [--keep DIR [--reuse]]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from repro import measurement  # noqa: E402
from repro.report import compare as compare_mod  # noqa: E402
from repro.report import sides  # noqa: E402
from repro.report.merge import build_report  # noqa: E402
from repro.scenarios.dataloader import SLOWDOWN_ENV  # noqa: E402

METRIC = "steady_it_per_s"
CPU_METRIC = "steady_it_per_cpu_s"


def run(
    results: Path, config: str, patterns: list[str], slowdown: int, rounds: int = 1
) -> tuple[float, float]:
    """One ``repro run`` into ``results``: ``(wall seconds, CPU seconds of its process tree)``."""
    argv = [sys.executable, "-m", "repro", "run", "--no-doctor", "--config", config]
    argv += ["--results-dir", str(results), "--rounds", str(rounds)]
    for pattern in patterns:
        argv += ["-k", pattern]
    env = dict(os.environ)
    env[SLOWDOWN_ENV] = str(slowdown)
    started = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    _pid, status, usage = os.wait4(proc.pid, 0)  # the runner's rusage includes its reaped tree
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"repro run exited {os.waitstatus_to_exitcode(status)} ({results})")
    return time.monotonic() - started, usage.ru_utime + usage.ru_stime


_MATRICES: dict[Path, dict] = {}


def side(group: tuple[Path, ...]) -> sides.Side:
    """A fresh :class:`~repro.report.compare.Side` of the runs in ``group`` pooled (pooling
    reuses the sides' indexes, so each comparison gets its own)."""
    for results in group:
        if results not in _MATRICES:
            _MATRICES[results] = build_report([results], predict=False).matrix
    return sides.pool([sides.side_of(_MATRICES[r], str(r)) for r in group])


def name(group: tuple[Path, ...]) -> str:
    return "+".join(results.name for results in group)


_FIGURES: dict[tuple[Path, str], dict[str, measurement.Measurement]] = {}


def figures(results: Path, metric: str = METRIC) -> dict[str, measurement.Measurement]:
    """``{case id: metric}`` of one run (read once)."""
    if (results, metric) in _FIGURES:
        return _FIGURES[(results, metric)]
    out = _FIGURES[(results, metric)] = {}
    for cell in build_report([results], predict=False).cells:
        for case in cell.cases:
            found = measurement.from_metrics(case.metrics, metric)
            if found is not None:
                out[case.case] = found
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(REPO / "matrix.yaml"))
    parser.add_argument("-k", dest="patterns", action="append", default=[])
    parser.add_argument("--runs", type=int, default=5, help="runs of each kind (default: 5)")
    parser.add_argument("--slowdown", type=int, default=2, help="planted factor (default: 2)")
    parser.add_argument(
        "--per-side", type=int, default=1, help="runs pooled into one side (default: 1)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repro run --rounds N: each run measures every case N times (default: 1)",
    )
    parser.add_argument("--threshold", type=float, default=compare_mod.DEFAULT_THRESHOLD * 100)
    parser.add_argument("--keep", metavar="DIR", help="keep the result trees under DIR")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="with --keep: judge the runs already kept there (plain-N, slow-N) instead of "
        "running, e.g. the same runs with another --per-side",
    )
    args = parser.parse_args(argv)
    if args.reuse and not args.keep:
        parser.error("--reuse needs --keep DIR")
    if args.per_side < 1 or args.runs // args.per_side < 2:
        parser.error("--runs / --per-side must leave at least two sides of each kind")
    patterns = args.patterns or ["dataloader[device=cpu"]
    with tempfile.TemporaryDirectory(prefix="repro-metric-stability-") as tmp:
        root = Path(args.keep or tmp)
        plain, slowed = [], []
        print(
            f"{'run':<8} {'wall s':>7} {'cpu s':>7}  per case: {METRIC} / {CPU_METRIC}, "
            "median ±spread (5 windows per round)"
        )
        for index in range(args.runs):
            for kind, factor, into in (("plain", 1, plain), ("slow", args.slowdown, slowed)):
                results = root / f"{kind}-{index + 1}"
                if args.reuse:
                    if not results.is_dir():
                        raise SystemExit(f"--reuse: {results} is missing")
                    wall = cpu = float("nan")
                else:
                    results.mkdir(parents=True)
                    wall, cpu = run(results, args.config, patterns, factor, args.rounds)
                into.append(results)
                cpu_figures = figures(results, CPU_METRIC)
                shown = "  ".join(
                    f"{m.median:.0f}±{m.spread or 0:.0f}/"
                    + (
                        f"{c.median:.0f}±{c.spread or 0:.0f}"
                        if (c := cpu_figures.get(case))
                        else "-"
                    )
                    for case, m in sorted(figures(results).items())
                )
                busy = figures(results, measurement.HOST_BUSY).values()
                shown += f"  | host_busy max {max((b.median for b in busy), default=0):.0%}"
                print(f"{results.name:<8} {wall:>7.1f} {cpu:>7.1f}  {shown}", flush=True)
        threshold = args.threshold / 100
        k = args.per_side
        plain_sides = [tuple(plain[i : i + k]) for i in range(0, len(plain) - k + 1, k)]
        slowed_sides = [tuple(slowed[i : i + k]) for i in range(0, len(slowed) - k + 1, k)]
        false_alarms, within, busy_noise, pairs = [], 0, 0, 0
        for a, b in itertools.combinations(plain_sides, 2):
            pairs += 1
            for base, cand in ((a, b), (b, a)):
                result = compare_mod.compare(side(base), side(cand), threshold=threshold)
                within += len(result["throughput_noise"])
                busy_noise += sum(_busy(n) for n in result["throughput_noise"])
                false_alarms += [
                    (name(base), name(cand), f"{d['case']} {d['metric']}", d["change"])
                    for d in result["throughput_drops"]
                ]
        cases = sorted(figures(plain[0]))
        misses, not_judged, planted = [], [], 0
        for base, cand in itertools.product(plain_sides, slowed_sides):
            planted += 1
            result = compare_mod.compare(side(base), side(cand), threshold=threshold)
            found = {d["case"] for d in result["throughput_drops"]}
            busy = {n["case"] for n in result["throughput_noise"] if _busy(n)}
            for case in cases:
                if case not in found:
                    (not_judged if case in busy else misses).append((name(base), name(cand), case))
        changes = {
            metric: [
                (s.median - p.median) / p.median
                for pr, sr in itertools.product(plain, slowed)
                for case, p in figures(pr, metric).items()
                if (s := figures(sr, metric).get(case)) is not None and p.median
            ]
            for metric in (METRIC, CPU_METRIC)
        }
        same = {
            metric: [
                abs(figures(b, metric)[case].median / figures(a, metric)[case].median - 1)
                for a, b in itertools.combinations(plain, 2)
                for case in figures(a, metric)
                if case in figures(b, metric) and figures(a, metric)[case].median
            ]
            for metric in (METRIC, CPU_METRIC)
        }
    for base, cand, case, change in false_alarms:
        print(f"FALSE ALARM {base} -> {cand}: {case} {change * 100:+.1f}%")
    for base, cand, case in misses:
        print(f"MISSED {base} -> {cand}: {case}")
    print(f"sides: {len(plain_sides)} plain and {len(slowed_sides)} slowed, {k} run(s) pooled each")
    print(
        f"same build: {pairs} pairs compared both ways, {len(false_alarms)} drops reported "
        f"({within} figures more past {args.threshold:g}% not counted: within the runs' "
        f"spread, or the run got less CPU, or {busy_noise} of them measured on a busy host)"
    )
    found = planted * len(cases) - len(misses) - len(not_judged)
    print(
        f"planted {args.slowdown}x slowdown: {planted} pairs x {len(cases)} cases, {found} found "
        f"(a drop counted), {len(misses)} missed, {len(not_judged)} not judged (host busy: "
        f"others took over {measurement.BUSY_LIMIT:.0%} of it)"
    )
    for metric in (METRIC, CPU_METRIC):
        if changes[metric] and same[metric]:
            print(
                f"  {metric}: same build differs by up to {max(same[metric]) * 100:.0f}% "
                f"(median {statistics.median(same[metric]) * 100:.0f}%); planted slowdown moves "
                f"it {min(changes[metric]) * 100:+.0f}% to {max(changes[metric]) * 100:+.0f}%"
            )
    if not_judged:
        print("inconclusive where the host was busy: run it again on a quieter host")
    return 1 if false_alarms or misses or not_judged else 0


def _busy(entry: dict) -> bool:
    """Whether a ``throughput_noise`` entry was set aside because the host was busy."""
    return entry["basis"].startswith("the host was busy")


if __name__ == "__main__":
    raise SystemExit(main())

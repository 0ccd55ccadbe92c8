"""Run the main job N times and print every case whose verdict differs between runs (issue 19).

Each run is the README's main job (``python -m repro run``: matrix.yaml, every case, default
isolation), at each ``--jobs`` value (default: 1 and the default ``-j``, the usable cores),
optionally beside a CPU hog (``--hog N``: N busy-looping processes for the whole benchmark, the
load of a shared CI runner). A case's verdict is its outcome and signature; a case whose
verdict is not the same in every run is printed with each run's verdict (so a by-design red of
matrix.yaml's ``expect:`` that did not reproduce every time is printed too); the summary
counts the reds that were the same in every run.

    python benchmarks/verdict_stability.py [--runs 5] [--jobs 1 2] [--hog 2] [-k PATTERN ...]

Exit status 1 when any case differs. Issue 19's acceptance: 5 runs at the default -j beside a
CPU hog, 0 differences.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from main_job import REPO, run, verdicts  # noqa: E402

from repro.runner.job import usable_cores  # noqa: E402


def _spin() -> None:
    while True:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(REPO / "matrix.yaml"))
    parser.add_argument("-k", dest="patterns", action="append", default=[])
    parser.add_argument("--runs", type=int, default=5, help="runs per -j (default: %(default)s)")
    parser.add_argument(
        "--jobs", type=int, nargs="+", default=sorted({1, usable_cores()}),
        help="-j values (default: 1 and the usable cores)",
    )  # fmt: skip
    parser.add_argument(
        "--hog", type=int, default=0, help="busy-looping processes beside the runs (default: 0)"
    )
    args = parser.parse_args(argv)
    hogs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.hog)]
    for hog in hogs:
        hog.start()
    seen: dict[str, list[tuple[str, str]]] = {}  # case id -> one verdict per run, in run order
    labels: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="repro-stability-") as tmp:
            print(f"{'run':<10} {'wall s':>8} {'cpu s':>8}  outcomes (hog: {args.hog})", flush=True)
            for jobs in args.jobs:
                for index in range(args.runs):
                    label = f"-j{jobs}#{index + 1}"
                    results = Path(tmp) / label.replace("#", "_")
                    results.mkdir()
                    wall, cpu, junit = run("auto", jobs, results, args.config, args.patterns)
                    got = verdicts(junit)
                    for case_id, (outcome, signature, _isolation) in got.items():
                        seen.setdefault(case_id, [("-", "")] * len(labels)).append(
                            (outcome, signature)
                        )
                    labels.append(label)
                    for runs in seen.values():  # a case missing from this run
                        if len(runs) < len(labels):
                            runs.append(("missing", ""))
                    counts = Counter(v[0] for v in got.values())
                    summary = ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
                    print(f"{label:<10} {wall:>8.1f} {cpu:>8.1f}  {summary}", flush=True)
    finally:
        for hog in hogs:
            hog.kill()
    differing = {case_id: runs for case_id, runs in seen.items() if len(set(runs)) > 1}
    for case_id, runs in sorted(differing.items()):
        print(f"DIFF {case_id}:")
        for label, (outcome, signature) in zip(labels, runs, strict=True):
            print(f"    {label:<10} {outcome} {signature}")
    stable_reds = sum(
        1
        for runs in seen.values()
        if len(set(runs)) == 1 and runs[0][0] not in ("passed", "skipped")
    )
    print(
        f"{len(seen)} cases x {len(labels)} runs; {stable_reds} reds the same every run; "
        f"{len(differing)} cases differ in outcome or signature"
    )
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The main job's ``repro run`` measured side by side, with full-catalogue parity (issue 13).

Runs the real CLI (``python -m repro run``, the README's main job: matrix.yaml, every case,
doctor included) one mode after the other, so the timings are comparable:

- ``fresh -j1``: a new interpreter per case, one case at a time (the baseline);
- ``auto -j1``: zygote-forked where a scenario allows, one at a time;
- ``auto -jN``: the same with N cases at once (N: ``--jobs``, default the usable cores).

For each it prints the wall time (seconds), the CPU time of everything the run started
(seconds, user + system, from ``wait4``) and the outcome counts. Then it compares every case's
outcome and signature with the ``fresh -j1`` run and prints each difference: exit status 1 when
any case differs (full-catalogue parity, item 3).

    python benchmarks/main_job.py [--config matrix.yaml] [-k PATTERN ...] [--jobs N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from repro import properties as property_names  # noqa: E402
from repro.runner.job import usable_cores  # noqa: E402


def verdicts(junit: Path) -> dict[str, tuple[str, str, str]]:
    """``{case id: (outcome, signature, isolation)}`` of every testcase of a run."""
    out = {}
    for case in ET.parse(junit).iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        out[case.get("name")] = (
            props.get(property_names.OUTCOME, "?"),
            props.get(property_names.SIGNATURE, ""),
            props.get(property_names.ISOLATION, "-"),
        )
    return out


def run(
    isolation: str, jobs: int, results: Path, config: str, patterns: list[str]
) -> tuple[float, float, Path]:
    """``(wall seconds, CPU seconds of the whole process tree, junit.xml)`` of one run."""
    argv = [sys.executable, "-m", "repro", "run", "--config", config, "--results-dir", str(results)]
    argv += ["--isolation", isolation, "-j", str(jobs)]
    for pattern in patterns:
        argv += ["-k", pattern]
    started = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _pid, _status, usage = os.wait4(proc.pid, 0)  # the runner's rusage includes its reaped tree
    elapsed = time.monotonic() - started
    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    return elapsed, usage.ru_utime + usage.ru_stime, run_dir / "junit.xml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(REPO / "matrix.yaml"))
    parser.add_argument("-k", dest="patterns", action="append", default=[])
    parser.add_argument("--jobs", type=int, default=usable_cores(), help="N of the last mode")
    parser.add_argument("--keep", metavar="DIR", help="keep the result trees under DIR")
    args = parser.parse_args()
    modes = [("fresh", 1), ("auto", 1), ("auto", args.jobs)]
    runs: dict[str, dict[str, tuple[str, str, str]]] = {}
    with tempfile.TemporaryDirectory(prefix="repro-main-job-") as tmp:
        root = Path(args.keep or tmp)
        print(f"{'mode':<12} {'wall s':>8} {'cpu s':>8}  outcomes", flush=True)
        for isolation, jobs in modes:
            label = f"{isolation} -j{jobs}"
            results = root / label.replace(" ", "")
            results.mkdir(parents=True, exist_ok=False)
            wall, cpu, junit = run(isolation, jobs, results, args.config, args.patterns)
            runs[label] = verdicts(junit)
            counts = Counter(v[0] for v in runs[label].values())
            summary = ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
            print(f"{label:<12} {wall:>8.1f} {cpu:>8.1f}  {summary}", flush=True)
    baseline = runs["fresh -j1"]
    differences = 0
    for label, other in runs.items():
        for case_id in sorted(set(baseline) | set(other)):
            a, b = baseline.get(case_id), other.get(case_id)
            if a is None or b is None or a[:2] != b[:2]:
                differences += 1
                print(f"DIFF {label} {case_id}: fresh={a} {label}={b}")
    forked = sum(1 for v in runs[f"auto -j{args.jobs}"].values() if v[2] == "zygote")
    print(
        f"{len(baseline)} cases; {forked} forked from the zygote under auto; "
        f"{differences} differ in outcome or signature from fresh -j1"
    )
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())

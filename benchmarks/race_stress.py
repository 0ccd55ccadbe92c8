"""Stress the runner's parallel case start and leftover sweep: count cases lost or killed.

Issue 19, item 1: a case's leftover sweep once killed a harness another worker thread had just
started (it looked like an orphan) and reaped other cases' exit statuses; 9 of 240 short fresh
cases at ``-j 4``/``-j 8`` ended "killed by SIGKILL (no heartbeat)" or "no verdict". This runs
the real CLI (``repro run --isolation fresh -j N``) on many short planted cases, with the
window between the sweep listing the runner's children and judging them widened on purpose
(``--pause-ms`` of sleep before and after every listing of the runner's own children, patched into psutil
in the runner process only), and counts every case whose verdict is not the planted one:

- ``pass~NNNN``: passes (the subject: a harness started while another case sweeps);
- ``kill_harness~NNNN`` (every ``--orphan-every``-th case): kills its own harness and leaves a
  ``setsid``'ed grandchild that only the runner's sweep can find; it must end ``crashed`` and
  its grandchild must be gone.

It also checks no process carrying a case token outlives the run. Prints one line per ``-j``
and a total; ``--json`` prints the counts as JSON. Exit 1 when any case was lost or killed.

    python benchmarks/race_stress.py [--cases 400] [--jobs 2 4 8] [--pause-ms 5] [--json]

Issue 19's acceptance: 0 of at least 1,000 cases lost or killed across -j 2/4/8.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from junitparser import JUnitXml  # noqa: E402

from repro import properties as property_names  # noqa: E402

#: The runner, with its own children's listing slowed (the sweep's judgement window widened).
WIDENED_RUNNER = """
import os, sys, time, psutil
pause_s = float(os.environ["RACE_PAUSE_MS"]) / 1000
runner_pid = os.getpid()
listing = psutil.Process.children
def slow_children(self, recursive=False):
    mine = self.pid == runner_pid and not recursive
    if mine:
        time.sleep(pause_s)  # a harness may be starting on another thread right now
    found = listing(self, recursive=recursive)
    if mine:
        time.sleep(pause_s)  # or exiting, or being registered
    return found
psutil.Process.children = slow_children
from repro import properties as property_names
from repro.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def kinds(cases: int, orphan_every: int) -> list[str]:
    """Case kinds: ``cases`` planted ids, every ``orphan_every``-th a ``kill_harness``."""
    return [
        f"kill_harness~{i:04d}" if orphan_every and i % orphan_every == orphan_every - 1
        else f"pass~{i:04d}"
        for i in range(cases)
    ]  # fmt: skip


def outcomes_of(junit: Path) -> dict[str, tuple[str, str]]:
    """{case id: (repro.outcome property, first result message)} from a run's junit.xml."""
    out = {}
    for suite in JUnitXml.fromfile(str(junit)):
        for case in suite:
            props = {}
            for child in case._elem:
                if child.tag == "properties":
                    props = {p.get("name"): p.get("value") for p in child}
            message = next((r.message or "" for r in case.result), "")
            out[case.name] = (props.get(property_names.OUTCOME, "?"), message)
    return out


def run_once(work: Path, jobs: int, case_kinds: list[str], pause_ms: float) -> dict:
    """One ``repro run -j jobs`` over ``case_kinds``; returns counts and the wrong verdicts."""
    project = work / f"j{jobs}"
    project.mkdir()
    pid_file = project / "grandchildren.txt"
    (project / "matrix.yaml").write_text(
        textwrap.dedent(
            f"""\
            version: 1
            defaults: {{results_dir: results}}
            variants:
              - {{runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}}
            scenarios:
              planted: {{module: planted, timeout_s: 30, params: {{kind: {json.dumps(case_kinds)}}}}}
            """
        )
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), str(REPO / "tests" / "planted"), env.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    env.pop("REPRO_CASE_TOKEN", None)
    env.update(RACE_PAUSE_MS=str(pause_ms), REPRO_PLANTED_PIDS=str(pid_file))
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", WIDENED_RUNNER, "run", "--no-doctor", "--isolation", "fresh",
         "-j", str(jobs)],
        cwd=project, env=env, capture_output=True, text=True, timeout=3600,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    seconds = time.monotonic() - start
    runs = (
        [p for p in (project / "results").iterdir() if p.is_dir()]
        if done.returncode
        in (
            0,
            1,
        )
        else []
    )
    if len(runs) != 1:
        raise SystemExit(f"-j {jobs}: repro run exit {done.returncode}: {done.stderr[-2000:]}")
    outcomes = outcomes_of(runs[0] / "junit.xml")
    wrong = []
    for kind in case_kinds:
        case_id = f"planted[kind={kind}]"
        want = "crashed" if kind.startswith("kill_harness") else "passed"
        got, message = outcomes.get(case_id, ("missing", "no testcase"))
        if got != want:
            wrong.append(f"{case_id}: {got} ({message[:160]})")
    grandchildren = [int(x) for x in pid_file.read_text().split()] if pid_file.exists() else []
    alive = [pid for pid in grandchildren if psutil.pid_exists(pid)]
    return {
        "jobs": jobs,
        "cases": len(case_kinds),
        "wrong": wrong,
        "grandchildren": len(grandchildren),
        "grandchildren_alive": alive,
        "seconds": round(seconds, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases", type=int, default=400, help="cases per -j (default: %(default)s)"
    )
    parser.add_argument("--jobs", type=int, nargs="+", default=[2, 4, 8], help="-j values")
    parser.add_argument(
        "--pause-ms", type=float, default=5.0,
        help="sleep before and after each listing of the runner's children, ms (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--orphan-every", type=int, default=10,
        help="every Nth case kills its harness, leaving an orphan (0: none; default: %(default)s)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    case_kinds = kinds(args.cases, args.orphan_every)
    rows = []
    with tempfile.TemporaryDirectory(prefix="repro-race-") as tmp:
        for jobs in args.jobs:
            row = run_once(Path(tmp), jobs, case_kinds, args.pause_ms)
            rows.append(row)
            if not args.json:
                print(
                    f"-j {jobs}: {len(row['wrong'])} of {row['cases']} cases lost or killed, "
                    f"{len(row['grandchildren_alive'])} of {row['grandchildren']} orphans left, "
                    f"{row['seconds']} s",
                    flush=True,
                )
                for line in row["wrong"]:
                    print(f"    {line}")
    total = sum(r["cases"] for r in rows)
    bad = sum(len(r["wrong"]) + len(r["grandchildren_alive"]) for r in rows)
    if args.json:
        print(json.dumps({"rows": rows, "total": total, "bad": bad}))
    else:
        print(f"total: {bad} of {total} cases lost, killed or leaving an orphan")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

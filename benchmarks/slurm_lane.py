"""Measure the Slurm lane on a throwaway single-node Slurm (tests/slurm_cluster.py), in seconds:

- the cluster's start (slurm.conf written -> node idle) and stop (scancel, queue drained,
  daemons gone), over ``--cycles`` start/stop cycles;
- submit-to-matrix of the 2-task array the tests run (the host lane and the venv lane of
  cpu-torch2.13, ``-k 'losses[device=cpu,case=empty_mask'``: 2 cases and the 7 doctor checks
  per lane, torch from a find-links directory): from
  ``repro slurm --wait`` starting to the report job's end, once with a new environment cache
  (the venv lane makes its uv environment; uv's own package cache may be warm) and once
  reusing it.

Needs root and Debian's ``slurmctld slurmd slurm-client munge``; prints one table. Say the
machine's load when quoting the figures (printed with them).

    python benchmarks/slurm_lane.py [--cycles 5] [--find-links /opt/wheels] [--skip-array]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import slurm_cluster  # noqa: E402

MATRIX = """\
version: 1
defaults: {{results_dir: results, python: "3.11"}}
variants:
  - {{runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}}
scenarios:
  losses: {{timeout_s: 120}}
slurm:
  lanes: [host, venv]
  python: {python}
"""


def _array(cluster: slurm_cluster.Cluster, work: Path, wheels: str, envs: Path, tag: str) -> float:
    env = {**os.environ, "SLURM_CONF": str(cluster.conf), "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "repro", "slurm", "--config", str(work / "matrix.yaml"),
         "--results-dir", str(work / f"results-{tag}"), "-k", "losses[device=cpu,case=empty_mask",
         "--find-links", wheels, "--index-url", "https://pypi.org/simple",
         "--env-python", "3.11", "--env-cache", str(envs), "--wait"],
        cwd=work, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"repro slurm --wait exited {done.returncode}:\n{done.stderr[-3000:]}")
    matrix = (work / f"results-{tag}" / "matrix.md").read_text()
    assert "cpu-torch2.13 (host, venv)" in matrix, matrix[:2000]
    return wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--find-links", default=os.environ.get("PIP_FIND_LINKS", "/opt/wheels"))
    parser.add_argument("--skip-array", action="store_true")
    args = parser.parse_args()
    why = slurm_cluster.unavailable()
    if why:
        raise SystemExit(why)
    starts, stops = [], []
    for _ in range(args.cycles):
        cluster = slurm_cluster.Cluster().start()
        starts.append(cluster.start_s or 0.0)
        stopped = time.monotonic()
        cluster.stop()
        stops.append(time.monotonic() - stopped)
    rows = [
        ("cluster start (slurm.conf -> node idle)", starts),
        ("cluster stop (scancel, drain, daemons gone)", stops),
    ]
    if not args.skip_array:
        work = Path(tempfile.mkdtemp(prefix="repro-slurm-bench-"))
        (work / "matrix.yaml").write_text(MATRIX.format(python=sys.executable))
        envs = work / "envs"
        try:
            with slurm_cluster.Cluster() as cluster:
                cold = _array(cluster, work, args.find_links, envs, "cold")
                warm = _array(cluster, work, args.find_links, envs, "warm")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        rows += [
            ("2-task array submit -> matrix, new env cache", [cold]),
            ("2-task array submit -> matrix, env reused", [warm]),
        ]
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, {os.cpu_count()} cores")
    print(f"{'measure':<48} {'n':>2} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name, values in rows:
        print(
            f"{name:<48} {len(values):>2} {statistics.median(values):>9.2f} "
            f"{min(values):>7.2f} {max(values):>7.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

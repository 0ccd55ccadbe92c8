"""Issue 19, item 1: parallel fresh cases with the sweep's judgement window widened on purpose
lose and kill none (the CI-sized run of ``benchmarks/race_stress.py``; >= 1,000 cases there).
With ``proctree.spawning()`` not holding the lock, 15 of these 80 cases ended "killed by SIGKILL
(no heartbeat)" or "no verdict, exit status 0", as in the field."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO, cli_env


@pytest.mark.slow
def test_parallel_fresh_cases_with_a_widened_sweep_window_lose_and_kill_none():
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "race_stress.py"),
         "--cases", "40", "--jobs", "4", "8", "--pause-ms", "5", "--json"],
        env=cli_env(), capture_output=True, text=True, timeout=900,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["total"] == 80
    assert [(r["jobs"], r["wrong"], r["grandchildren_alive"]) for r in counts["rows"]] == [
        (4, [], []),
        (8, [], []),
    ]
    assert all(r["grandchildren"] == 4 for r in counts["rows"])  # the orphans were really made
    assert done.returncode == 0, done.stderr

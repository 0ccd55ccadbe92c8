"""``repro run -j N`` (issue 13, item 4): cases side by side, exclusive ones alone, junit.xml and
progress in catalogue order, and the torch threads shared out."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import cases_by_name, cli_env, only_run_dir, run_cli, write_matrix
from junitparser import JUnitXml

from repro.runner.job import usable_cores

KINDS = ["window~a", "window~b", "alone~c", "window~d", "fail", "pass"]


def _run(project, state, *args):
    env = dict(cli_env(), REPRO_PLANTED_STATE=str(state))
    return subprocess.run(
        [sys.executable, "-m", "repro", "run", "--no-doctor", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _overlap(a: dict, b: dict) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


@pytest.mark.slow
def test_j2_runs_cases_side_by_side_exclusive_ones_alone_and_reports_in_catalogue_order(tmp_path):
    project, state = tmp_path / "p", tmp_path / "state"
    project.mkdir()
    state.mkdir()
    write_matrix(
        project,
        f"planted: {{module: planted, timeout_s: 30, params: {{kind: [{', '.join(KINDS)}]}}}}\n",
    )
    done = _run(project, state, "-j", "2")
    assert done.returncode == 1, done.stderr  # the planted fail
    ran = {p.stem: json.loads(p.read_text()) for p in state.glob("*.json")}
    assert _overlap(ran["window~a"], ran["window~b"]), ran  # two at once
    assert not any(_overlap(ran["alone~c"], ran[k]) for k in ("window~a", "window~b", "window~d"))
    # sharing the machine, a case gets cores/2 torch threads; alone it keeps torch's default
    assert ran["window~a"]["threads"] == max(1, usable_cores() // 2)

    junit = only_run_dir(project / "results") / "junit.xml"
    names = [case.name for suite in JUnitXml.fromfile(str(junit)) for case in suite]
    assert names == [f"planted[kind={k}]" for k in KINDS]
    outcomes = {n: p["repro.outcome"] for n, (_c, p) in cases_by_name(junit).items()}
    assert outcomes["planted[kind=fail]"] == "failed"
    assert sum(o == "passed" for o in outcomes.values()) == 5
    suite = next(iter(JUnitXml.fromfile(str(junit))))
    assert {p.name: p.value for p in suite.properties()}["repro.jobs"] == "2"
    # progress lines in catalogue order, whatever finished first
    indexes = [int(m) for m in re.findall(r"^\[ ?(\d+)/6\] ", done.stderr, re.M)]
    assert indexes == sorted(indexes) and set(indexes) == set(range(1, 7)), done.stderr


@pytest.mark.slow
def test_j1_runs_one_case_at_a_time(tmp_path):
    project, state = tmp_path / "p", tmp_path / "state"
    project.mkdir()
    state.mkdir()
    write_matrix(
        project, "planted: {module: planted, timeout_s: 30, params: {kind: [window~a, window~b]}}\n"
    )
    done = _run(project, state, "-j", "1")
    assert done.returncode == 0, done.stderr
    ran = {p.stem: json.loads(p.read_text()) for p in state.glob("*.json")}
    assert not _overlap(ran["window~a"], ran["window~b"])


@pytest.mark.slow
def test_a_bad_jobs_count_is_refused_naming_the_option(tmp_path):
    write_matrix(tmp_path, "planted: {module: planted, params: {kind: [pass]}}\n")
    for bad in ("0", "-3", "100000"):
        done = run_cli("run", "--no-doctor", "-j", bad, cwd=tmp_path)
        assert done.returncode == 2, (bad, done.stderr)
        assert "-j/--jobs: expected a whole number from 1 to" in done.stderr
    assert not (tmp_path / "results").exists()  # refused before any run directory

"""Issue 19 item 3: the report merges our runs per (host, variant, case id), newest result wins,
and a partial (interrupted) run adds its cases without hiding older ones; both are listed.

The runs are written by the real runner (``repro.runner.run_all`` with its ``junit.xml`` and
``run.json`` writers); only the case processes are replaced, by results of the shape
``repro.runner.executor.run_case`` returns. The slow tests run the real CLI end to end, with a
real Ctrl-C (SIGINT) of ``repro run``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli_env, run_cli, write_matrix

from repro.errors import Interrupted
from repro.outcomes import CaseResult, Outcome
from repro.report.html import render_html
from repro.report.markdown import md_escape, render_markdown
from repro.report.merge import build_report
from repro.runner import job
from repro.runner import run_all as run_all_mod
from repro.scenarios import Case

FINGERPRINT = {
    "schema": 1,
    "host": {"hostname": "vm", "os": "Debian GNU/Linux 12 (bookworm)", "wsl2": False},
    "gpus": [],
    "driver": {"nvidia": None, "cuda_driver_api": None, "rocm": None, "amdgpu": None},
    "runtime": {"torch": "2.13.0+cpu", "cuda": None, "hip": None, "accelerator": None},
    "unreadable": [],
}
VARIANT = {
    "id": "cpu-torch2.13",
    "runtime": "cpu",
    "torch": "2.13.0+cpu",
    "accelerator": "cpu",
    "source": "host",
}


def _case(scenario: str, params: dict[str, str]) -> Case:
    return Case(scenario, f"repro.scenarios.{scenario}", tuple(params.items()), 60.0)


LOSSES = [
    _case("losses", {"device": "cpu", "case": name})
    for name in ("dice_empty", "l1_masked", "bce_balanced", "dice_fixed")
]
FORK_SAFETY = [_case("fork_safety", {"start_method": method}) for method in ("spawn", "forkserver")]


def _result(case: Case, outcome: Outcome) -> CaseResult:
    red = outcome is not Outcome.PASSED
    return CaseResult(
        case.scenario,
        case.case_id,
        outcome,
        0.5,
        "loss is nan" if red else "",
        "nan_loss" if red else None,
        properties={f"param.{k}": str(v) for k, v in case.params},
    )


def _run(tmp_path: Path, cases: list[Case], outcomes: dict[str, Outcome], monkeypatch) -> Path:
    """One ``repro run`` into ``tmp_path/results`` through the real runner and writers; a case
    whose outcome is ``None`` in ``outcomes`` is where Ctrl-C arrives."""

    def fake_run_case(ctx, case, on_tick=None):
        outcome = outcomes[case.case_id]
        if outcome is None:
            raise KeyboardInterrupt
        return _result(case, outcome)

    monkeypatch.setattr(run_all_mod, "run_case", fake_run_case)
    options = job.RunOptions(results=str(tmp_path / "results"), isolation="fresh")
    time.sleep(1.05)  # run.json ``started`` has one-second resolution, as the real runner's
    run_id, run_dir = run_all_mod.new_run_dir(tmp_path / "results", VARIANT["id"])
    ctx = job.run_context(options, FINGERPRINT, VARIANT, run_id, run_dir, {})
    run_all_mod.run_all(ctx, cases, jobs=1)
    return run_dir


def _cell_cases(report) -> dict[str, str]:
    (cell,) = report.cells
    return {case.case: case.outcome.value for case in cell.cases}


def test_a_run_of_other_cases_adds_to_the_cell_instead_of_hiding_it(tmp_path, monkeypatch):
    # `repro run -k losses` (3 failed) then `repro run -k fork_safety` into the same results.
    losses = {c.case_id: Outcome.FAILED for c in LOSSES[:3]} | {LOSSES[3].case_id: Outcome.PASSED}
    _run(tmp_path, LOSSES, losses, monkeypatch)
    _run(tmp_path, FORK_SAFETY, {c.case_id: Outcome.PASSED for c in FORK_SAFETY}, monkeypatch)

    report = build_report([tmp_path / "results"])
    assert _cell_cases(report) == {
        **{case: outcome.value for case, outcome in losses.items()},
        **{c.case_id: "passed" for c in FORK_SAFETY},
    }
    assert report.cells[0].state == "failed"
    assert report.totals["failed"] == 3 and report.totals["tests"] == 6
    assert [i["state"] for i in report.matrix["inputs"]] == ["ok", "ok"]
    assert "Runs merged per case" not in render_markdown(report)  # nothing was superseded


def test_an_interrupted_run_keeps_older_failures_visible_and_is_listed(tmp_path, monkeypatch):
    # A full run with 3 failures, then a run stopped by Ctrl-C after one passing case.
    cases = LOSSES + FORK_SAFETY
    full = {c.case_id: Outcome.PASSED for c in cases}
    full.update({c.case_id: Outcome.FAILED for c in LOSSES[1:4]})
    first = _run(tmp_path, cases, full, monkeypatch)
    second_outcomes = {cases[0].case_id: Outcome.PASSED, cases[1].case_id: None}
    with pytest.raises(Interrupted) as stopped:
        _run(tmp_path, cases, second_outcomes, monkeypatch)
    second = max((tmp_path / "results").iterdir())
    assert str(stopped.value) == (
        f"interrupted after 1 of {len(cases)} cases; partial results in {second}"
    )
    run_info = json.loads((second / "run.json").read_text())
    assert (run_info["cases_done"], run_info["finished"], run_info["interrupted"]) == (
        1,
        None,
        True,
    )

    report = build_report([tmp_path / "results"])
    assert _cell_cases(report) == {c: o.value for c, o in full.items()}
    cell = report.cells[0]
    assert cell.state == "failed" and cell.counts["failed"] == 3
    # The passing case of the partial run is the newest result of that case.
    newest = {c.case: c.file for c in cell.cases}
    assert newest[cases[0].case_id] == (second / "junit.xml").as_posix()
    assert newest[cases[1].case_id] == (first / "junit.xml").as_posix()
    inputs = {i["path"]: i for i in report.matrix["inputs"]}
    old, new = inputs[(first / "junit.xml").as_posix()], inputs[(second / "junit.xml").as_posix()]
    assert new["partial"] == f"run incomplete: 1 of {len(cases)} cases done, interrupted"
    assert (old["state"], old["superseded_cases"], old["superseded_by"]) == (
        "ok",
        1,
        [new["path"]],
    )
    markdown = render_markdown(report)
    assert "## Runs merged per case" in markdown
    assert f"- partial: {md_escape(new['path'])}: run incomplete: 1 of {len(cases)}" in markdown
    assert f"- superseded: {md_escape(old['path'])}: 1 of {len(cases)} cases superseded" in markdown
    page = render_html(report, tmp_path)
    assert "Runs merged per case" in page and f"1 of {len(cases)} cases done" in page


def test_a_newer_run_of_the_same_case_wins_and_a_fully_replaced_run_is_superseded(
    tmp_path, monkeypatch
):
    first = _run(tmp_path, LOSSES[:1], {LOSSES[0].case_id: Outcome.FAILED}, monkeypatch)
    second = _run(tmp_path, LOSSES[:1], {LOSSES[0].case_id: Outcome.PASSED}, monkeypatch)
    report = build_report([tmp_path / "results"])
    assert _cell_cases(report) == {LOSSES[0].case_id: "passed"}
    states = {i["path"]: (i["state"], i["superseded_cases"]) for i in report.matrix["inputs"]}
    assert states == {
        (first / "junit.xml").as_posix(): ("superseded", 1),
        (second / "junit.xml").as_posix(): ("ok", 0),
    }
    assert report.cells[0].files == [(second / "junit.xml").as_posix()]


# ---- the real CLI, end to end ---------------------------------------------------------------

PLANTED = "planted: {module: planted, timeout_s: 120, params: {kind: [pass, sleep, fail, error]}}\n"


@pytest.mark.slow
def test_cli_union_of_two_selections_and_ctrl_c_after_one_passing_case(project):
    write_matrix(project, PLANTED)
    red = run_cli(
        "run", "--no-doctor", "-j", "1", "-k", "kind=fail", "-k", "kind=error", cwd=project
    )
    assert red.returncode == 1, red.stderr
    green = run_cli("run", "--no-doctor", "-j", "1", "-k", "kind=pass", cwd=project)
    assert green.returncode == 0, green.stderr
    done = run_cli("report", "results", "-o", "out", cwd=project)
    assert done.returncode == 0, done.stderr
    matrix = json.loads((project / "out" / "matrix.json").read_text())
    (cell,) = matrix["cells"]
    assert cell["counts"]["failed"] == 1 and cell["counts"]["error"] == 1
    assert cell["counts"]["passed"] == 1

    # Every case, stopped by Ctrl-C while the sleeper runs (after one passing case).
    before = set((project / "results").iterdir())
    time.sleep(1.05)  # run.json ``started`` has one-second resolution
    runner = subprocess.Popen(
        [sys.executable, "-m", "repro", "run", "--no-doctor", "--isolation", "fresh", "-j", "1"],
        cwd=project, env=cli_env(), text=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        run_json = None
        while run_json is None or json.loads(run_json.read_text()).get("cases_done") != 1:
            assert runner.poll() is None and time.monotonic() < deadline, "first case never ended"
            time.sleep(0.1)
            new = set((project / "results").iterdir()) - before
            if new and (min(new) / "run.json").is_file():
                run_json = min(new) / "run.json"
        os.kill(runner.pid, signal.SIGINT)
        _out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 130
    assert err.strip().splitlines()[-1] == (
        f"repro: interrupted after 1 of 4 cases; partial results in results/{run_json.parent.name}"
    )
    done = run_cli("report", "results", "-o", "out", cwd=project)
    assert done.returncode == 0, done.stderr
    matrix = json.loads((project / "out" / "matrix.json").read_text())
    (cell,) = matrix["cells"]
    assert (cell["state"], cell["counts"]["failed"], cell["counts"]["error"]) == ("error", 1, 1)
    partial = [i for i in matrix["inputs"] if i["partial"]]
    assert [i["path"] for i in partial] == [f"results/{run_json.parent.name}/junit.xml"]
    markdown = (project / "out" / "matrix.md").read_text()
    assert f"partial: results/{run_json.parent.name}/junit.xml" in markdown


def test_report_without_any_junit_input_is_exit_2_with_one_line(tmp_path):
    (tmp_path / "results").mkdir()
    done = run_cli("report", "results", "-o", "out", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no JUnit" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()

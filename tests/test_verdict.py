"""Issue 29 item 1: one verdict at every level. `repro run` applies the expectations (a scenario
module's EXPECT, then matrix.yaml's expect:, which wins) as each case ends, so its progress
line, totals line and exit status say what `repro report --config` says; `--fail-on-problems`
makes the report exit 1 on what the run exits 1 on. Real CLI, real child processes."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli, write_matrix

pytestmark = pytest.mark.slow

#: losses' own EXPECT covers empty_mask eps=0 (failed, nan_detected); the planted fail case is
#: covered by matrix.yaml's expect: below, the planted pass case by a strict entry.
SCENARIOS = """\
losses:
  module: repro.scenarios.losses
  params: {device: [cpu], case: [empty_mask], eps: [0]}
planted:
  module: planted
  timeout_s: 20
  params: {kind: [pass, fail]}
"""

EXPECT = """\
expect:
  - case: "planted[kind=fail]"
    outcome: failed
    reason: "planted: red by design"
"""

STRICT = """\
  - case: "planted[kind=pass]"
    outcome: failed
    strict: true
    reason: "planted: should fail, and a pass of it must be looked at"
"""

RAISES = """\
boom:
  script: boom.py
"""


def _totals(text: str) -> str:
    return next(line for line in text.splitlines() if "problems: " in line).split("repro: ")[-1]


def _run_and_report(project):
    run = run_cli("run", "--no-doctor", cwd=project, timeout=300)
    report = run_cli(
        "report", "results", "-o", "results", "--config", "matrix.yaml", "--fail-on-problems",
        cwd=project, timeout=120,
    )  # fmt: skip
    return run, report


def test_expected_reds_exit_0_in_run_and_report_with_the_same_totals_line(project):
    path = write_matrix(project, SCENARIOS)
    path.write_text(path.read_text() + EXPECT)
    run, report = _run_and_report(project)
    assert run.returncode == 0, run.stderr[-3000:]
    assert report.returncode == 0, report.stderr[-3000:]
    line = "problems: 0 · expected reproductions: 2 · passed: 1 · skipped: 0"
    assert _totals(run.stderr) == line == _totals(report.stdout)
    # The progress says so on the case's own line, and the closing list names both.
    assert "EXPECTED" in run.stderr and "planted[kind=fail]" in run.stderr
    assert "-> expected reproduction; " in run.stderr
    data = json.loads((project / "results" / "matrix.json").read_text())
    assert data["totals"]["expected"] == 2 and data["totals"]["problems"] == 0


def test_a_strict_entrys_pass_and_a_raising_script_exit_1_after_the_matrix_is_written(project):
    path = write_matrix(project, SCENARIOS + RAISES)
    path.write_text(path.read_text() + EXPECT + STRICT)
    (project / "boom.py").write_text("raise RuntimeError('planted: this script always raises')\n")
    run, report = _run_and_report(project)
    assert run.returncode == 1, run.stderr[-3000:]
    assert report.returncode == 1, report.stderr[-3000:]
    assert (project / "results" / "matrix.json").is_file()  # written before exit 1
    line = (
        "problems: 2 (1 failed, 1 unexpectedly passing (strict)) · expected reproductions: 2 · "
        "passed: 0 · skipped: 0"
    )
    assert _totals(run.stderr) == line == _totals(report.stdout)
    assert "exit 1 (--fail-on-problems): 2 problem(s)" in report.stderr
    # Without --fail-on-problems the report still exits 0 (it only writes the matrix).
    plain = run_cli("report", "results", "-o", "out", "--config", "matrix.yaml", cwd=project)
    assert plain.returncode == 0, plain.stderr[-2000:]
    run_json = json.loads(
        run_cli("run", "--no-doctor", "--json", "-k", "planted", cwd=project).stdout
    )
    verdicts = {c["id"]: c["expect"] for c in run_json["cases"]}
    assert verdicts == {
        "planted[kind=pass]": "unexpectedly passing",
        "planted[kind=fail]": "expected",
    }
    assert run_json["red"] is True and run_json["counts"]["strict_passes"] == 1

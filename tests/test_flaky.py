"""Flaky cells (issue 11 item 3): `repro run --rerun-failures N`, the report's flaky label and
`repro compare` telling flaky from regressed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cases_by_name, cli_env, only_run_dir, write_matrix

from repro.junit.writer import write_junit
from repro.outcomes import CaseResult, Outcome, Totals, totals_line
from repro.report import compare as compare_mod
from repro.report import sides
from repro.report.markdown import render_markdown
from repro.report.merge import build_report
from repro.report.merge import totals_line as report_totals_line

PLANTED_MATRIX = """\
planted:
  module: planted
  timeout_s: 6
  params: {kind: [flaky_once, fail, pass]}
"""


def run_repro(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "repro", *args],
        cwd=cwd,
        env={**cli_env(), **env},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_rerun_failures_records_flaky_and_deterministic_cases(project):
    write_matrix(project, PLANTED_MATRIX)
    state = project / "state"
    state.mkdir()
    done = run_repro(
        "run",
        "--no-doctor",
        "--rerun-failures",
        "2",
        cwd=project,
        env={"REPRO_PLANTED_STATE": str(state)},
    )
    assert done.returncode == 1, done.stderr  # kind=fail is red every time
    run_dir = only_run_dir(project / "results")
    cases = cases_by_name(run_dir / "junit.xml")

    _case, flaky = cases["planted[kind=flaky_once]"]
    assert flaky["repro.outcome"] == "passed"
    assert (flaky["repro.flaky"], flaky["repro.reruns"]) == ("true", "1")
    assert flaky["repro.first_outcome"] == "failed"
    assert flaky["repro.first_signature"]
    assert "failed on the first attempt" in flaky["repro.first_message"]
    # Both attempts keep their own log: the first failure is not overwritten by the rerun.
    assert flaky["repro.first_log"] != flaky["repro.log"]
    assert "failed on the first attempt" in (run_dir / flaky["repro.first_log"]).read_text()
    assert (run_dir / flaky["repro.log"]).is_file()

    _case, deterministic = cases["planted[kind=fail]"]
    assert deterministic["repro.outcome"] == "failed"
    assert (deterministic["repro.flaky"], deterministic["repro.reruns"]) == ("false", "2")

    _case, passed = cases["planted[kind=pass]"]
    assert "repro.flaky" not in passed and "repro.reruns" not in passed

    # The closing totals count the flaky case apart, in the words of repro report.
    last = done.stderr.strip().splitlines()[-2]
    assert "problems: 1 (1 failed)" in last and "passed: 1" in last and "flaky: 1" in last


@pytest.mark.slow
def test_without_reruns_the_flaky_case_is_just_red(project):
    write_matrix(project, PLANTED_MATRIX)
    state = project / "state"
    state.mkdir()
    done = run_repro(
        "run", "--no-doctor", "-k", "planted[kind=flaky_once]", cwd=project,
        env={"REPRO_PLANTED_STATE": str(state)},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    _case, props = cases_by_name(only_run_dir(project / "results") / "junit.xml")[
        "planted[kind=flaky_once]"
    ]
    assert props["repro.outcome"] == "failed" and "repro.flaky" not in props


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--rerun-failures", "-1"), ("--rerun-failures", "11"), ("--rounds", "0"), ("--rounds", "21")],
)
@pytest.mark.slow
def test_rerun_failures_and_rounds_out_of_range_are_a_one_line_error(project, flag, value):
    write_matrix(project, PLANTED_MATRIX)
    done = run_repro("run", flag, value, cwd=project, env={})
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and flag in done.stderr
    assert "Traceback" not in done.stderr


def test_totals_count_flaky_apart_from_passed_and_problems():
    totals = Totals()
    totals.add("planted", Outcome.PASSED, flaky=True)
    totals.add("planted", Outcome.PASSED)
    totals.add("planted", Outcome.FAILED, flaky=False)
    assert (totals.flaky, totals.passed, totals.problem_count, totals.cases) == (1, 1, 1, 3)
    assert totals.line().endswith("· flaky: 1")
    assert "flaky" not in Totals(passed=2).line()
    results = [
        CaseResult("planted", "a", Outcome.PASSED, properties={"repro.flaky": "true"}),
        CaseResult("planted", "b", Outcome.PASSED),
    ]
    assert totals_line(results).endswith("passed: 1 · skipped: 0 · flaky: 1")


# ------------------------------------------------------------------------------------------
# report and compare

HOST_PROPS = {"host.key": "host-a", "variant.id": "cpu-torch2.13"}


def _write(root: Path, cases: list[CaseResult]) -> Path:
    run = root / "run"
    run.mkdir(parents=True)
    write_junit(run / "junit.xml", cases, HOST_PROPS)
    return root


def _flaky_case(case_id: str) -> CaseResult:
    return CaseResult(
        "planted",
        case_id,
        Outcome.PASSED,
        properties={
            "repro.flaky": "true",
            "repro.reruns": "1",
            "repro.first_signature": "planted_first",
        },
    )


def _red_every_time(case_id: str) -> CaseResult:
    return CaseResult(
        "planted",
        case_id,
        Outcome.FAILED,
        message="AssertionError: still red",
        signature="planted_sig",
        properties={"repro.flaky": "false", "repro.reruns": "2"},
    )


def test_report_labels_a_flaky_case_and_counts_it_apart(tmp_path):
    root = _write(
        tmp_path / "in",
        [_flaky_case("planted[kind=a]"), CaseResult("planted", "planted[kind=b]", Outcome.PASSED)],
    )
    report = build_report([root])
    (cell,) = report.cells
    assert cell.effective_state == "flaky"
    assert cell.display_counts() == [("flaky", 1), ("passed", 1)]
    cases = {c["case"]: c for c in report.matrix["cells"][0]["cases"]}
    assert cases["planted[kind=a]"]["flaky"] is True
    assert cases["planted[kind=a]"]["first_signature"] == "planted_first"
    assert "flaky" not in cases["planted[kind=b]"]
    assert report_totals_line(report).endswith("passed: 1 · skipped: 0 · flaky: 1")
    md = render_markdown(report)
    row = next(line for line in md.splitlines() if "kind=a" in line)
    assert (
        row.startswith("| 🔀 flaky |") and "planted\\_first" in row and "passed on rerun 1" in row
    )
    assert "flaky (red, then passed on a rerun)" in md  # the legend explains it


def test_report_legend_has_no_flaky_entry_without_a_flaky_case(tmp_path):
    root = _write(tmp_path / "in", [CaseResult("planted", "planted[kind=b]", Outcome.PASSED)])
    assert "flaky" not in render_markdown(build_report([root]))


def test_compare_tells_flaky_from_regressed(tmp_path):
    base = _write(
        tmp_path / "base",
        [
            CaseResult("planted", "planted[kind=a]", Outcome.PASSED),
            CaseResult("planted", "planted[kind=b]", Outcome.PASSED),
        ],
    )
    cand = _write(
        tmp_path / "cand", [_flaky_case("planted[kind=a]"), _red_every_time("planted[kind=b]")]
    )
    result = compare_mod.compare(sides.load_side(base), sides.load_side(cand))
    assert [r["case"] for r in result["flaky"]] == ["planted[kind=a]"]
    assert result["flaky"][0]["first_signature"] == "planted_first"
    assert [r["case"] for r in result["regressions"]] == ["planted[kind=b]"]
    assert result["fixes"] == []
    assert compare_mod.exit_code(result) == 1
    md = compare_mod.render_markdown(result)
    assert "1 flaky (passed on a rerun)" in md and "## Flaky" in md


def test_compare_a_flaky_candidate_alone_does_not_fail(tmp_path):
    base = _write(tmp_path / "base", [CaseResult("planted", "planted[kind=a]", Outcome.PASSED)])
    cand = _write(tmp_path / "cand", [_flaky_case("planted[kind=a]")])
    result = compare_mod.compare(sides.load_side(base), sides.load_side(cand))
    assert result["regressions"] == [] and result["summary"]["flaky"] == 1
    assert compare_mod.exit_code(result) == 0


# ---- repro run --rounds (issue 29): rounds of the cases that record a rate -------------------

RATE_MATRIX = """\
planted:
  module: planted
  timeout_s: 6
  params: {kind: [rate, rate_red_later, pass]}
"""


@pytest.mark.slow
def test_rounds_measures_rate_cases_in_rounds_and_combines_them(project):
    write_matrix(project, RATE_MATRIX)
    state = project / "state"
    state.mkdir()
    done = run_repro(
        "run", "--no-doctor", "--rounds", "3", cwd=project, env={"REPRO_PLANTED_STATE": str(state)}
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # rate_red_later failed in round 2
    assert "round 2/3: 2 cases that record a rate" in done.stderr
    assert "round 3/3: 1 case that records a rate" in done.stderr
    run_dir = only_run_dir(project / "results")
    cases = cases_by_name(run_dir / "junit.xml")

    _case, rate = cases["planted[kind=rate]"]
    # rounds' samples 10-14, 20-24, 30-34: medians 12, 22, 32; the spread between the rounds
    # (their interquartile range, 10) is larger than any round's own (2)
    assert (rate["repro.outcome"], rate["repro.rounds"]) == ("passed", "3")
    assert float(rate["metric.planted_it_per_s"]) == 22.0
    assert float(rate["metric.planted_it_per_s.spread"]) == 10.0
    assert float(rate["metric.planted_it_per_s.n"]) == 15.0
    assert float(rate["metric.planted_metric_s"]) == 0.25  # a single figure: the rounds' median
    logs = rate["repro.round_logs"].split()
    assert len(logs) == 2 and rate["repro.log"] not in logs
    assert all((run_dir / log).is_file() for log in [rate["repro.log"], *logs])

    _case, red = cases["planted[kind=rate_red_later]"]
    assert (red["repro.outcome"], red["repro.rounds"]) == ("failed", "2")
    assert (state / "rate_red_later.attempts").read_text() == "xx"  # not measured again

    _case, plain = cases["planted[kind=pass]"]
    assert "repro.rounds" not in plain  # records no rate: run once

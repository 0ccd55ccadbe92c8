"""``repro report --github-annotations``: one GitHub Actions ``::error`` line per red cell with
its signatures, escaped as the runner expects, and the fleet workflow's merge step asks for them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from conftest import REPO

from repro.cli.main import main
from repro.report import annotations
from repro.report.merge import build_report

GOLDEN_INPUTS = REPO / "tests" / "fixtures" / "junit" / "golden" / "inputs"


def _report(tmp_path: Path, *names: str):
    for name in names:
        shutil.copytree(GOLDEN_INPUTS / name, tmp_path / name)
    return build_report([tmp_path / name for name in names])


def test_each_red_cell_is_one_error_with_its_signatures(tmp_path):
    report = _report(tmp_path, "run-a", "run-b", "run-c", "run-d", "pytest-cpu", "broken")
    lines = annotations.github_annotations(report)
    red = [c for c in report.cells if c.effective_state in annotations.RED_STATES]
    # red: the RTX 4090's cu128 cell (hung), the CPU host's cpu-torch2.8 cell (run-b's ddp case
    # failed eaddrinuse; runs merge per case) and the pytest-cpu cell (error)
    assert len(lines) == len(red) == 3
    hung = next(line for line in lines if "cu128-torch2.8::" in line)
    assert hung.startswith("::error title=NVIDIA GeForce RTX 4090 · driver 570.86.15")
    assert "::hung: fork_after_thread_lock, sigbus" in hung
    assert any(line.startswith("::error title=CPU only") and "eaddrinuse" in line for line in lines)
    # The passed (the RTX 4090's cpu-torch2.8) and invalid cells are not red: no annotation.
    assert not [line for line in lines if "RTX 4090" in line and "cpu-torch2.8" in line]
    assert not [line for line in lines if "broken" in line]


def test_a_report_without_red_cells_has_no_annotation(tmp_path):
    assert annotations.github_annotations(_report(tmp_path, "run-d")) == []


def test_messages_and_titles_are_escaped_for_the_runner():
    assert annotations._data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert annotations._property("host: a, b") == "host%3A a%2C b"


def test_past_the_limit_one_line_counts_the_rest(tmp_path):
    report = _report(tmp_path, "run-a", "run-b", "run-c", "run-d", "pytest-cpu")
    lines = annotations.github_annotations(report, limit=1)
    assert (
        len(lines) == 2
        and lines[1] == "::error title=repro-matrix::2 more red cells (see matrix.md)"
    )


def test_the_cli_prints_them_after_the_totals_and_refuses_them_with_json(tmp_path, capsys):
    for name in ("run-a", "pytest-cpu"):
        shutil.copytree(GOLDEN_INPUTS / name, tmp_path / name)
    args = ["report", str(tmp_path / "run-a"), str(tmp_path / "pytest-cpu"), "-o", str(tmp_path)]
    assert main([*args, "--github-annotations"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2].startswith("::error title=") and out[-1].startswith("::error title=")
    assert main([*args, "--github-annotations", "--json"]) == 2
    assert "not with --json" in capsys.readouterr().err


def test_the_fleet_workflow_annotates_red_cells_in_its_merge_step():
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "gpu-matrix.yml").read_text())
    steps = [s for job in workflow["jobs"].values() for s in job.get("steps", [])]
    merge = next(s for s in steps if s.get("name") == "merge")
    assert 'repro" report matrix' in merge["run"] and "--github-annotations" in merge["run"]


def test_the_fleet_workflow_fails_on_an_unexpected_red_after_the_matrix_is_kept():
    """Issue 29: the report job writes, summarises and uploads the matrix, then fails when
    `repro report --fail-on-problems` found an unexpected red; a repro job fails on exit 1 of its
    run after its results are written (the upload step runs whatever the status)."""
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "gpu-matrix.yml").read_text())
    steps = workflow["jobs"]["report"]["steps"]
    names = [s.get("name") or s.get("uses", "") for s in steps]
    merge = steps[names.index("merge")]
    assert "--fail-on-problems || status=$?" in merge["run"]
    assert merge["run"].index("GITHUB_STEP_SUMMARY") < merge["run"].index("GITHUB_OUTPUT")
    fail = steps[names.index("fail on an unexpected red")]
    assert "steps.merge.outputs.status == '1'" in fail["if"] and "exit 1" in fail["run"]
    upload = next(i for i, n in enumerate(names) if n.startswith("actions/upload-artifact"))
    assert upload < names.index("fail on an unexpected red")
    repro_steps = workflow["jobs"]["repro"]["steps"]
    uploads = [s for s in repro_steps if s.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["if"] == "always()"
    job = (REPO / ".github" / "scripts" / "repro-job.sh").read_text()
    assert 'if [ "$status" -eq 1 ]; then' in job and "unexpected red" in job

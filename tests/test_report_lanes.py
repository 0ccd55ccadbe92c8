"""The matrix keys a cell by (host, variant, lane) (issue 31): the host and the venv lane of one
variant are two columns, each with its own runs, merged per case within its lane only."""

from __future__ import annotations

import json
from pathlib import Path

from test_merge_per_case import FINGERPRINT, VARIANT, _case, _result

from repro.outcomes import Outcome
from repro.report.compare import compare
from repro.report.markdown import render_markdown
from repro.report.merge import build_report
from repro.report.model import column_id
from repro.runner import job
from repro.runner import run_all as run_all_mod

LOSSES = [_case("losses", {"eps": "0"}), _case("losses", {"eps": "1e-06"})]


def _run(results: Path, outcomes: dict[str, Outcome], properties: dict[str, str], monkeypatch):
    """One ``repro run`` of LOSSES through the real runner and writers, with ``--property``."""
    monkeypatch.setattr(
        run_all_mod,
        "run_case",
        lambda ctx, case, on_tick=None: _result(case, outcomes[case.case_id]),
    )
    options = job.ResolvedRun(results_dir=str(results), isolation="fresh")
    run_id, run_dir = run_all_mod.new_run_dir(results, VARIANT.id)
    ctx = job.run_context(options, FINGERPRINT, VARIANT, run_id, run_dir, properties)
    run_all_mod.run_all(ctx, LOSSES, jobs=1)
    return run_dir


def test_the_host_and_the_venv_lane_of_one_variant_are_two_columns(tmp_path, monkeypatch):
    results = tmp_path / "results"
    host = {LOSSES[0].case_id: Outcome.FAILED, LOSSES[1].case_id: Outcome.PASSED}
    venv = {LOSSES[0].case_id: Outcome.PASSED, LOSSES[1].case_id: Outcome.PASSED}
    _run(results, host, {}, monkeypatch)
    _run(results, venv, {"variant.lane": "venv"}, monkeypatch)
    report = build_report([results])
    assert len(report.cells) == 2
    columns = {cell.lane: cell for cell in report.cells}
    assert {lane: cell.column for lane, cell in columns.items()} == {
        "host": "cpu-torch2.13 (host)",
        "venv": "cpu-torch2.13 (venv)",
    }
    assert {cell.variant for cell in report.cells} == {"cpu-torch2.13"}
    # Neither lane's result hides the other's: the same case is red in one, green in the other.
    outcomes = {lane: sorted(c.outcome.value for c in cell.cases) for lane, cell in columns.items()}
    assert outcomes == {"host": ["failed", "passed"], "venv": ["passed", "passed"]}
    assert [v["id"] for v in report.variants] == ["cpu-torch2.13 (host)", "cpu-torch2.13 (venv)"]
    table = render_markdown(report)
    header = next(line for line in table.splitlines() if line.startswith("| host"))
    assert "cpu-torch2.13 (host)" in header and "cpu-torch2.13 (venv)" in header
    cells_json = {c["lane"]: c for c in report.matrix["cells"]}
    assert cells_json["venv"]["column"] == "cpu-torch2.13 (venv)"
    # compare keys by the column too: the venv lane going red is a regression of its own.
    worse = {LOSSES[0].case_id: Outcome.FAILED, LOSSES[1].case_id: Outcome.PASSED}
    later = tmp_path / "later"
    _run(later, host, {}, monkeypatch)
    _run(later, worse, {"variant.lane": "venv"}, monkeypatch)
    base = json.loads(json.dumps(report.matrix))
    result = compare(base, build_report([later]).matrix)
    assert [r["variant"] for r in result["regressions"]] == ["cpu-torch2.13 (venv)"]


def test_a_variant_with_one_lane_keeps_its_id_as_the_column(tmp_path, monkeypatch):
    results = tmp_path / "results"
    outcomes = {case.case_id: Outcome.PASSED for case in LOSSES}
    _run(results, outcomes, {}, monkeypatch)
    _run(results, outcomes, {}, monkeypatch)
    report = build_report([results])
    (cell,) = report.cells
    assert (cell.variant, cell.lane, cell.column) == ("cpu-torch2.13", "host", "cpu-torch2.13")
    assert "lane" not in report.matrix["cells"][0]  # matrix.json as before for one lane
    assert column_id("v", "", {"", "host"}) == "v"  # results naming no lane keep the id
    assert column_id("v", "venv", {"host", "venv"}) == "v (venv)"

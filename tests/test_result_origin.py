"""Results whose origin is known (issue 32, item 1): a run directory's result is the junit.xml
its runner wrote, run.json records its SHA-256, any other XML file inside a run directory is an
input of its own, and a junit.xml edited after its run is marked in every output.

The attack is real: a planted case (``tests/planted/planted.py``, kind ``override``) writes
``override.xml`` into its own run directory (and one into ``logs/``), restating itself as
passed under the run's host key and variant id, then fails; ``repro run`` and ``repro report``
are the real CLI. Before issue 32 the override superseded the runner's junit.xml and the red
cell turned green.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import cli_env, run_cli, write_matrix

from repro.junit.sidecar import write_run_info
from repro.junit.writer import write_junit
from repro.outcomes import CaseResult, Outcome
from repro.report.markdown import md_escape
from repro.report.merge import build_report

CASE = "planted[kind=override]"


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory) -> Path:
    """A real ``repro run`` of the override case (and a passing one); the project directory."""
    import subprocess
    import sys

    project = tmp_path_factory.mktemp("override")
    write_matrix(
        project, "planted: {module: planted, timeout_s: 60, params: {kind: [override, pass]}}\n"
    )
    env = {**cli_env(), "REPRO_PLANTED_RESULTS": str(project / "results")}
    done = subprocess.run(
        [sys.executable, "-m", "repro", "run", "--no-doctor"],
        cwd=project, env=env, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]  # the override case failed
    return project


def _copy(project: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A private copy of the planted run's results; (results, its one run directory)."""
    results = tmp_path / "results"
    shutil.copytree(project / "results", results)
    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    return results, run_dir


def _report(results: Path, out: Path) -> tuple[dict, str, str]:
    done = run_cli("report", str(results), "-o", str(out), "--no-coverage", cwd=out.parent)
    assert done.returncode in (0, 1), done.stderr
    matrix = json.loads((out / "matrix.json").read_text())
    return matrix, (out / "matrix.md").read_text(), done.stderr


def _run_cell(matrix: dict) -> dict:
    (cell,) = [c for c in matrix["cells"] if not c["variant"].startswith("stray: ")]
    return cell


@pytest.mark.slow
def test_run_json_records_the_digest_of_the_junit_xml_the_runner_wrote(planted_run):
    (run_dir,) = [p for p in (planted_run / "results").iterdir() if p.is_dir()]
    info = json.loads((run_dir / "run.json").read_text())
    data = (run_dir / "junit.xml").read_bytes()
    assert info["junit"] == {
        "file": "junit.xml",
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
    }
    assert info["cases_done"] == info["cases_total"] == 2


def test_a_planted_override_changes_no_verdict_and_is_named_in_the_report(planted_run, tmp_path):
    results, run_dir = _copy(planted_run, tmp_path)
    assert (run_dir / "override.xml").is_file() and (run_dir / "logs" / "override.xml").is_file()
    matrix, markdown, stderr = _report(results, tmp_path / "out")

    cell = _run_cell(matrix)
    assert cell["state"] == "failed" and cell["files"] == [f"{run_dir}/junit.xml"]
    override = [c for c in cell["cases"] if c["case"] == CASE]
    assert [c["outcome"] for c in override] == ["failed"]  # not replaced, not doubled
    assert cell["counts"]["failed"] == 1 and cell["counts"]["passed"] == 1

    strays = {i["path"]: i for i in matrix["inputs"] if i["origin"] == "stray"}
    assert sorted(strays) == [f"{run_dir}/logs/override.xml", f"{run_dir}/override.xml"]
    for path, record in strays.items():
        assert record["variant"].startswith("stray: ") and record["variant"].endswith(
            path.split(f"{run_dir.parent}/", 1)[1]
        )
        named = [p["reason"] for p in matrix["problems"] if p["path"] == path]
        assert named and "never as that run's results" in named[0]
        assert path in stderr and md_escape(path) in markdown
    assert "stray: " in markdown  # their own columns
    assert [i["origin"] for i in matrix["inputs"] if i["path"].endswith("/junit.xml")] == ["run"]
    assert not any("changed_after_run" in c for c in matrix["cells"])


def test_a_junit_xml_edited_after_its_run_is_marked_in_every_output(planted_run, tmp_path):
    results, run_dir = _copy(planted_run, tmp_path)
    junit = run_dir / "junit.xml"
    text = re.sub(r"<failure[^>]*>.*?</failure>", "", junit.read_text(), flags=re.S)
    junit.write_text(text.replace('value="failed"', 'value="passed"'))
    matrix, markdown, stderr = _report(results, tmp_path / "out")

    cell = _run_cell(matrix)
    assert cell["changed_after_run"] == [str(junit)]
    (record,) = [i for i in matrix["inputs"] if i["path"] == str(junit)]
    assert record["changed_after_run"].startswith("changed after the run")
    assert f"{junit}: changed after the run" in stderr
    assert "✏️ changed after the run" in markdown
    assert "changed after the run" in (tmp_path / "out" / "matrix.html").read_text()


def _write_run(run_dir: Path, outcome: Outcome, *, digest: bool = True) -> None:
    run_dir.mkdir(parents=True)
    result = CaseResult("losses", "losses[device=cpu]", outcome, 0.5)
    written = write_junit(run_dir / "junit.xml", [result], {"host.key": "h", "variant.id": "v"})
    info = {
        "schema": 1,
        "run_id": run_dir.name,
        "host_key": "h",
        "started": "2026-01-01T00:00:00Z",
        "finished": "2026-01-01T00:01:00Z",
        "cases_total": 1,
        "cases_done": 1,
        "variant": {"id": "v"},
    }
    if digest:
        info["junit"] = {"file": "junit.xml", "sha256": written.sha256, "bytes": written.size}
    write_run_info(run_dir, info)


def test_a_nested_run_json_inside_a_run_directory_makes_no_run_of_its_own(tmp_path):
    """A case can write a run.json too: only the outermost run directory's junit.xml counts."""
    run = tmp_path / "results" / "r1"
    _write_run(run, Outcome.FAILED)
    _write_run(run / "logs" / "fake", Outcome.PASSED)
    report = build_report([tmp_path / "results"])
    origins = {Path(r.path).relative_to(tmp_path).as_posix(): r.origin for r in report.inputs}
    assert origins == {"results/r1/junit.xml": "run", "results/r1/logs/fake/junit.xml": "stray"}
    cell = report.cell("h", "v")
    assert cell is not None and cell.state == "failed" and len(cell.cases) == 1


def test_foreign_junit_given_on_purpose_merges_as_before(tmp_path):
    foreign = tmp_path / "ci" / "pytest"
    foreign.mkdir(parents=True)
    (foreign / "report.xml").write_text(
        '<testsuite name="t"><testcase classname="a" name="b"/></testsuite>'
    )
    report = build_report([tmp_path / "ci"])
    (record,) = report.inputs
    assert (record.origin, record.variant, record.state) == ("foreign", "pytest", "ok")
    # an XML file named on the command line is taken as given, even inside a run directory
    run = tmp_path / "results" / "r1"
    _write_run(run, Outcome.FAILED)
    shutil.copy(foreign / "report.xml", run / "extra.xml")
    report = build_report([run / "extra.xml", run / "junit.xml"])
    origins = {Path(r.path).name: (r.origin, r.variant) for r in report.inputs}
    assert origins == {"extra.xml": ("foreign", "r1"), "junit.xml": ("run", "v")}
    assert not report.problems


def test_a_run_older_than_the_digest_is_read_without_a_mark(tmp_path):
    _write_run(tmp_path / "results" / "r1", Outcome.PASSED, digest=False)
    report = build_report([tmp_path / "results"])
    (record,) = report.inputs
    assert record.origin == "run" and record.changed is None and not report.problems


def test_a_killed_runs_digest_mismatch_says_it_may_be_the_kill(tmp_path):
    """Killed between rewriting junit.xml and recording its digest (one fsync apart), a run
    that never finished cannot tell that from an edit: the mark says both."""
    run = tmp_path / "results" / "r1"
    _write_run(run, Outcome.FAILED)
    info = json.loads((run / "run.json").read_text())
    write_run_info(run, {**info, "finished": None})
    result = CaseResult("losses", "losses[device=cpu]", Outcome.FAILED, 0.5)
    second = CaseResult("amp", "amp[device=cpu]", Outcome.PASSED, 0.5)
    write_junit(run / "junit.xml", [result, second], {"host.key": "h", "variant.id": "v"})
    (record,) = build_report([tmp_path / "results"]).inputs
    assert record.changed and record.changed.endswith(
        "(or the run was killed as it wrote it: it never finished)"
    )

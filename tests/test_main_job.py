"""The main job end to end, as a new user runs it: every default case, then the matrix."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import REPO, cases_by_name, only_run_dir, run_cli
from junitparser import JUnitXml

pytestmark = pytest.mark.slow


def test_default_catalogue_on_a_cpu_host_gives_junit_fingerprint_logs_and_matrix(project):
    shutil.copy(REPO / "matrix.yaml", project / "matrix.yaml")
    done = run_cli("run", cwd=project, timeout=900)
    # Every deliberate reproduction is its scenario's EXPECT: expected, so exit 0 (issue 29).
    assert done.returncode == 0, done.stderr[-3000:]
    run_line = next(x for x in done.stderr.splitlines() if x.startswith("repro: problems: "))
    assert run_line.startswith("repro: problems: 0 · expected reproductions: 10 · ")
    # skipped GPU cases: one line per reason, not one per case
    assert done.stderr.count("no CUDA/ROCm device visible") <= 2
    run_dir = only_run_dir(project / "results")
    assert (run_dir / "fingerprint.json").is_file() and (run_dir / "logs").is_dir()

    xml = JUnitXml.fromfile(str(run_dir / "junit.xml"))
    suites = list(xml)
    cases = cases_by_name(run_dir / "junit.xml")
    assert len(cases) >= 30
    for suite in suites:  # the fingerprint travels with every testsuite
        props = {p.name: p.value for p in suite.properties()}
        assert props["host.key"] and props["runtime.torch"].startswith("2.")
        assert props["variant.id"].endswith(
            "-torch" + ".".join(props["runtime.torch"].split(".")[:2])
        )
    gpu_cases = [
        (case, props)
        for name, (case, props) in cases.items()
        if "device=cuda" in name or "backend=nccl" in name
    ]
    assert gpu_cases
    for case, props in gpu_cases:
        assert props["repro.outcome"] == "skipped" and case.result[0].message, case.name
    throughput = [
        props
        for name, (_c, props) in cases.items()
        if name.startswith("dataloader[") and props["repro.outcome"] == "passed"
    ]
    assert throughput and all(
        float(p["metric.steady_it_per_s"]) > 0 and float(p["metric.first_batch_s"]) > 0
        for p in throughput
    )
    for name, (_case, props) in cases.items():
        assert props["repro.outcome"] == "skipped" or (run_dir / props["repro.log"]).is_file(), name

    report = run_cli(
        "report", "results", "-o", "results", "--config", "matrix.yaml", "--fail-on-problems",
        cwd=project, timeout=120,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    totals = report.stdout.strip().splitlines()[-1]
    # repro.outcomes.Totals.line(): the same line as the run's, doctor checks counted apart.
    assert totals == run_line.removeprefix("repro: ")
    assert " · doctor checks: " in totals or not any(n.startswith("doctor") for n in cases)
    for name in ("matrix.json", "matrix.md", "matrix.html"):
        assert (project / "results" / name).stat().st_size > 0
    matrix = json.loads((project / "results" / "matrix.json").read_text())
    (cell,) = matrix["cells"]
    doctor = sum(1 for name in cases if name.startswith("doctor["))
    assert cell["counts"]["tests"] == len(cases) - doctor
    assert cell["counts"]["doctor_checks"] == doctor and cell["counts"] == matrix["totals"]
    assert matrix["start_methods"] and matrix["start_methods"][0]["steady_state"] is True

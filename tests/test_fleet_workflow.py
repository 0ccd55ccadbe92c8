"""Issue 11 acceptance: the steps of .github/workflows/gpu-matrix.yml run locally, in order.

plan (``repro plan --github --tier pr``) -> two ``repro`` jobs on the CPU lane, each writing its
own ``results/`` folder (one with a planted flaky case, one with a planted regression) -> the
report job as the workflow does it: every job's artifact downloaded into ``matrix/``, the previous
matrix.json copied in, ``repro report matrix --output-dir matrix --config matrix.yaml --history
matrix/history``, then ``repro compare baseline.json matrix/matrix.json``.

The CPU lane runs ``repro run --as-variant ID`` (what the planned ``repro docker-run`` runs inside
its image) so the test needs no Docker.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from conftest import cli_env

pytestmark = pytest.mark.slow

VARIANT_A = "cpu-torch2.13"  # the job with the planted flaky case
VARIANT_B = "cpu-torch2.12"  # the job with the planted regression

MATRIX_YAML = """\
version: 1
defaults: {results_dir: results}
variants:
  - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}
  - {runtime: cpu, torch: "2.12.0", base_image: "python:3.12-slim"}
tiers:
  pr: {variants: ["cpu-*"]}
  nightly: {variants: ["*"]}
runners:
  cpu: [ubuntu-latest]
scenarios:
  planted:
    module: planted
    timeout_s: 6
    params: {kind: [pass, fail, flaky_once, fail_when_switched]}
expect:
  - case: "planted[kind=fail]"
    outcome: failed
    reason: "planted: red by design"
"""


def repro(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "repro", *args],
        cwd=cwd,
        env={**cli_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def repro_job(cwd: Path, variant: str, results: Path, env: dict[str, str]) -> int:
    """One `repro` job of the workflow on the CPU lane; returns its exit status (0 or 1)."""
    done = repro(
        "run",
        "--no-doctor",
        "--as-variant",
        variant,
        "--allow-variant-mismatch",  # one interpreter stands in for both torch pins
        "--results-dir",
        str(results),
        "--rerun-failures",
        "2",
        cwd=cwd,
        env=env,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs += [value for name, value in attrs if name == "href" and value]


def test_workflow_steps_plan_two_jobs_report_compare(tmp_path):
    (tmp_path / "matrix.yaml").write_text(MATRIX_YAML)
    passing_state = tmp_path / "state-already-attempted"  # flaky_once passes at once here
    passing_state.mkdir()
    (passing_state / "flaky_once.attempted").touch()

    # -- plan --------------------------------------------------------------------------------
    done = repro("plan", "--github", "--tier", "pr", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    jobs = json.loads(done.stdout)["include"]
    cpu_jobs = {job["variant"]: job for job in jobs if job["kind"] == "cpu"}
    assert set(cpu_jobs) == {VARIANT_A, VARIANT_B}
    assert all(job["runs-on"] == ["ubuntu-latest"] for job in cpu_jobs.values())

    # -- baseline: the previous successful run, both jobs green (bar the expected failure) ------
    base_results = tmp_path / "previous-results"
    for variant in (VARIANT_A, VARIANT_B):
        env = {"REPRO_PLANTED_STATE": str(passing_state)}
        # kind=fail is red by design (matrix.yaml expect:): expected, so the job is green.
        assert repro_job(tmp_path, variant, base_results, env) == 0
    done = repro(
        "report", str(base_results), "--output-dir", "previous", "--config", "matrix.yaml",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    # -- the two repro jobs, each uploading its own results/ folder ----------------------------
    fresh_state = tmp_path / "state-fresh"
    fresh_state.mkdir()
    job_a, job_b = tmp_path / "job-a" / "results", tmp_path / "job-b" / "results"
    # Job A: only a flaky case (passed on a rerun) -> green; job B: a regression -> red.
    assert repro_job(tmp_path, VARIANT_A, job_a, {"REPRO_PLANTED_STATE": str(fresh_state)}) == 0
    assert (
        repro_job(
            tmp_path,
            VARIANT_B,
            job_b,
            {"REPRO_PLANTED_STATE": str(passing_state), "REPRO_PLANTED_BREAK": "1"},
        )
        == 1
    )

    # -- report job: download-artifact (pattern results-*, path matrix) puts each artifact in
    # matrix/<artifact name>/; then the previous matrix.json is copied in, then report.
    matrix = tmp_path / "matrix"
    shutil.copytree(job_a, matrix / f"results-{VARIANT_A}")
    shutil.copytree(job_b, matrix / f"results-{VARIANT_B}")
    shutil.copy(tmp_path / "previous" / "matrix.json", matrix / "matrix.json")
    shutil.copy(tmp_path / "previous" / "matrix.json", tmp_path / "baseline.json")
    done = repro(
        "report", "matrix", "--output-dir", "matrix", "--config", "matrix.yaml",
        "--history", "matrix/history", "--github-annotations", "--fail-on-problems", cwd=tmp_path,
    )  # fmt: skip
    # The workflow's merge step: the matrix is written, then the unexpected red fails the job.
    assert done.returncode == 1, done.stderr
    assert "exit 1 (--fail-on-problems): 1 problem(s)" in done.stderr
    totals = next(line for line in done.stdout.splitlines() if line.startswith("problems: "))
    assert totals.startswith("problems: 1 (1 failed) · expected reproductions: 2 · ")
    assert any(line.startswith("::error") for line in done.stdout.splitlines())
    merged = json.loads((matrix / "matrix.json").read_text())

    # Both jobs' cells, keyed by host and variant (one host, two variants).
    cells = {(c["host"], c["variant"]): c for c in merged["cells"]}
    assert {variant for _host, variant in cells} == {VARIANT_A, VARIANT_B}
    assert len({host for host, _variant in cells}) == 1 and len(cells) == 2
    by_variant = {
        variant: {case["case"]: case for case in cell["cases"]}
        for (_host, variant), cell in cells.items()
    }
    # Expected reproductions are shown as expected, not red, in both cells.
    for variant in (VARIANT_A, VARIANT_B):
        assert by_variant[variant]["planted[kind=fail]"]["expect"]["status"] == "expected"
    # The flaky case: passed on a rerun in job A, labelled flaky.
    flaky = by_variant[VARIANT_A]["planted[kind=flaky_once]"]
    assert (flaky["outcome"], flaky["flaky"], flaky["reruns"]) == ("passed", True, 1)
    regressed = by_variant[VARIANT_B]["planted[kind=fail_when_switched]"]
    assert (regressed["outcome"], regressed["flaky"]) == ("failed", False)

    md = (matrix / "matrix.md").read_text()
    assert "🔀 flaky" in md and "flaky: 1" in md
    html = (matrix / "matrix.html").read_text()
    assert 'class="badge s-flaky">flaky<' in html
    assert 'class="badge s-expected">expected<' in html

    # Every log link in matrix.html resolves to a file inside the report folder.
    parser = _Links()
    parser.feed(html)
    log_links = [h for h in parser.hrefs if not h.startswith("#") and not urlparse(h).scheme]
    assert len(log_links) >= 4, parser.hrefs  # red, expected and flaky cases of both jobs
    root = matrix.resolve()
    for href in log_links:
        target = (matrix / unquote(urlparse(href).path)).resolve()
        assert target.is_relative_to(root) and target.is_file(), href

    # -- compare against the baseline: the regression fails the job, the flaky case does not.
    done = repro("compare", "baseline.json", "matrix/matrix.json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    regressions = done.stdout.split("## Regressions", 1)[1].split("\n## ", 1)[0]
    assert "fail\\_when\\_switched" in regressions and "flaky\\_once" not in regressions
    flaky_section = done.stdout.split("## Flaky", 1)[1].split("\n## ", 1)[0]
    assert "flaky\\_once" in flaky_section
    done = repro("compare", "baseline.json", "matrix/matrix.json", "--json", cwd=tmp_path)
    result = json.loads(done.stdout)
    assert [r["case"] for r in result["regressions"]] == ["planted[kind=fail_when_switched]"]
    assert [r["case"] for r in result["flaky"]] == ["planted[kind=flaky_once]"]

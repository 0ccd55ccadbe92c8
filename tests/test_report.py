"""repro.report (merge, markdown, html) and repro.junit.reader: reading JUnit from any producer, keying cells, rendering the matrix outputs.

Our own results are written with repro.junit.writer.write_junit (the real writer) plus a run.json sidecar;
foreign files are captured-style fixtures under tests/fixtures/junit/. The golden files under
tests/fixtures/junit/golden/ are regenerated with ``REPRO_UPDATE_GOLDEN=1 pytest tests/test_report.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.parse
from datetime import datetime, timezone
from pathlib import Path

import pytest

from repro import data as shipped_data
from repro.cli.main import main as repro_main
from repro.errors import ConfigError
from repro.junit import reader as reader_mod
from repro.junit.writer import write_junit
from repro.outcomes import CaseResult, Outcome
from repro.report.html import render_html
from repro.report.markdown import render_markdown
from repro.report.merge import build_report, totals_line
from repro.report.model import GENERATOR
from repro.report.outputs import render_json, write_outputs


def main(argv: list[str]) -> int:
    """``repro report ARGV...`` through the one command-line entry point."""
    return repro_main(["report", *argv])


FIXTURES = Path(__file__).parent / "fixtures" / "junit"
GOLDEN = FIXTURES / "golden"
NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=timezone.utc)

GPU_HOST = "NVIDIA GeForce RTX 4090 · driver 570.86.15 · Ubuntu 24.04.1 LTS"
CPU_HOST = "CPU only · Debian GNU/Linux 12 (bookworm)"


def sample_results() -> list[CaseResult]:
    """A run with every outcome, metrics and a log path, as the runner would report it."""
    return [
        CaseResult(
            "dataloader",
            "dataloader[start_method=fork,workers=2]",
            Outcome.PASSED,
            3.25,
            metrics={"it_per_s": 41.5, "first_batch_s": 0.82},
            log_path="logs/dataloader-fork-2.log",
        ),
        CaseResult(
            "dataloader",
            "dataloader[start_method=fork,workers=4]",
            Outcome.HUNG,
            60.0,
            "watchdog fired after 60 s",
            "fork_after_thread_lock",
            "Thread 0x7f (most recent call first):\n  File ...",
            log_path="logs/dataloader-fork-4.log",
        ),
        CaseResult(
            "cudnn",
            "cudnn[benchmark=1,dtype=fp16]",
            Outcome.FAILED,
            1.5,
            "CUDNN_STATUS_NOT_SUPPORTED | conv <fp16> `benchmark`",
            "cudnn_not_supported",
            "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED",
            log_path="logs/cudnn-1.log",
        ),
        CaseResult(
            "shm",
            "shm[shm_size=64m]",
            Outcome.CRASHED,
            2.0,
            "killed by SIGBUS",
            "sigbus",
            "Bus error",
        ),
        CaseResult(
            "amp", "amp[dtype=bf16]", Outcome.ERROR, 0.5, "ImportError: no module named apex", ""
        ),
        CaseResult("ddp", "ddp[ranks=2]", Outcome.SKIPPED, 0.0, "needs 2 GPUs, found 1"),
    ]


def write_run(
    run_dir: Path,
    results: list[CaseResult],
    *,
    host_key: str,
    variant_id: str,
    sidecar: bool = True,
    properties: dict[str, str] | None = None,
    logs: bool = True,
    started: str = "2025-06-01T10:00:00+00:00",
) -> Path:
    """Write results/<run-id>/junit.xml (+ run.json, fingerprint.json, logs) like the runner does."""
    run_dir.mkdir(parents=True, exist_ok=True)
    runtime = variant_id.split("-", 1)[0]
    props = {
        "variant.id": variant_id,
        "variant.runtime": runtime,
        "variant.torch": "2.8.0+" + runtime,
        "host.key": host_key,
        "host.os": host_key.rsplit(" · ", 1)[-1],
        "host.wsl2": "false",
        "runtime.torch": "2.8.0+" + runtime,
        "repro.run_id": run_dir.name,
    }
    if "NVIDIA" in host_key:
        props["host.driver.nvidia"] = "570.86.15"
        props["host.gpu.0.name"] = "NVIDIA GeForce RTX 4090"
    props.update(properties or {})
    write_junit(run_dir / "junit.xml", results, props)
    if sidecar:
        run = {
            "schema": 1,
            "run_id": run_dir.name,
            "variant": {
                "id": variant_id,
                "runtime": runtime,
                "torch": "2.8.0+" + runtime,
                "accelerator": "cuda" if runtime.startswith("cu") else "cpu",
                "source": "matrix",
            },
            "host_key": host_key,
            "started": started,
            "finished": "2025-06-01T10:05:00+00:00",
            "repro_version": "0.1.0",
            "cases_total": len(results),
            "cases_done": len(results),
        }
        (run_dir / "run.json").write_text(json.dumps(run, indent=2, sort_keys=True) + "\n")
        fingerprint = {"host": {"key": host_key}, "gpus": [], "driver": {}, "runtime": {}}
        (run_dir / "fingerprint.json").write_text(
            json.dumps(fingerprint, indent=2, sort_keys=True) + "\n"
        )
    if logs:
        for result in results:
            if result.log_path:
                log = run_dir / result.log_path
                log.parent.mkdir(parents=True, exist_ok=True)
                log.write_text(f"log of {result.case_id}\n")
    return run_dir / "junit.xml"


def copy_fixture(name: str, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / name, dest)
    return dest


#: The verdict counts of matrix.json's counts (repro.outcomes.Totals.to_json) beside the outcomes.
VERDICTS = (
    "problems",
    "expected",
    "unexpectedly_passing",
    "strict_passes",
    "flaky",
    "doctor_checks",
    "doctor_problems",
)


def counts(**kwargs: int) -> dict[str, int]:
    """matrix.json counts: scenario cases per outcome (``tests`` their sum), ``problems`` the red
    outcomes unless given, the other verdict counts 0 unless given."""
    base = {o.value: kwargs.get(o.value, 0) for o in Outcome}
    base["tests"] = sum(base.values())
    base.update({name: kwargs.get(name, 0) for name in VERDICTS})
    if "problems" not in kwargs:
        base["problems"] = sum(base[o.value] for o in Outcome if o.is_problem)
    return base


# ------------------------------------------------------------------------------------------
# Our own results


def test_own_results_counted_per_outcome_with_metrics_and_logs(tmp_path):
    write_run(
        tmp_path / "results" / "run-1",
        sample_results(),
        host_key=GPU_HOST,
        variant_id="cu128-torch2.8",
    )
    report = build_report([tmp_path / "results"], now=NOW)

    assert report.problems == []
    assert [(c.host, c.variant) for c in report.cells] == [(GPU_HOST, "cu128-torch2.8")]
    cell = report.matrix["cells"][0]
    assert cell["state"] == "hung"
    assert cell["counts"] == counts(passed=1, failed=1, error=1, crashed=1, hung=1, skipped=1)
    by_case = {c["case"]: c for c in cell["cases"]}
    passed = by_case["dataloader[start_method=fork,workers=2]"]
    assert passed["scenario"] == "dataloader"
    assert passed["outcome"] == "passed"
    assert passed["signature"] is None
    assert passed["metrics"] == {"first_batch_s": 0.82, "it_per_s": 41.5}
    assert passed["time_s"] == 3.25
    assert passed["log"] == (tmp_path / "results/run-1/logs/dataloader-fork-2.log").as_posix()
    assert passed["file"] == (tmp_path / "results/run-1/junit.xml").as_posix()
    # repro.outcome keeps crashed/hung distinct although both are <error> elements.
    assert by_case["shm[shm_size=64m]"]["outcome"] == "crashed"
    assert by_case["shm[shm_size=64m]"]["signature"] == "sigbus"
    assert (
        by_case["dataloader[start_method=fork,workers=4]"]["signature"] == "fork_after_thread_lock"
    )
    assert by_case["amp[dtype=bf16]"]["signature"] == "unknown"
    assert by_case["ddp[ranks=2]"]["message"] == "needs 2 GPUs, found 1"
    assert report.matrix["hosts"] == [
        {
            "key": GPU_HOST,
            "properties": {
                "host.driver.nvidia": "570.86.15",
                "host.gpu.0.name": "NVIDIA GeForce RTX 4090",
                "host.key": GPU_HOST,
                "host.os": "Ubuntu 24.04.1 LTS",
                "host.wsl2": "false",
            },
        }
    ]
    variant = report.matrix["variants"][0]
    assert variant["id"] == "cu128-torch2.8"
    assert variant["properties"]["variant.accelerator"] == "cuda"  # from run.json
    assert variant["properties"]["runtime.torch"] == "2.8.0+cu128"  # from the XML
    assert report.matrix["inputs"] == [
        {
            "path": (tmp_path / "results/run-1/junit.xml").as_posix(),
            "state": "ok",
            "reason": None,
            "host": GPU_HOST,
            "variant": "cu128-torch2.8",
            "tests": 6,
            "partial": None,
            "superseded_cases": 0,
            "superseded_by": [],
            "origin": "run",
            "changed_after_run": None,
        }
    ]


def test_runs_from_two_hosts_with_identical_suites_stay_separate_cells(tmp_path):
    results = [CaseResult("cuda_basic", "cuda_basic[device=cpu]", Outcome.PASSED, 1.0)]
    # Same suite names, no hostname, no timestamp: junitparser's merge would collapse these.
    write_run(
        tmp_path / "a" / "run-1", results, host_key=GPU_HOST, variant_id="cpu-torch2.8", logs=False
    )
    write_run(
        tmp_path / "b" / "run-1", results, host_key=CPU_HOST, variant_id="cpu-torch2.8", logs=False
    )
    report = build_report([tmp_path / "a", tmp_path / "b"], now=NOW)

    assert [(c["host"], c["variant"]) for c in report.matrix["cells"]] == [
        (CPU_HOST, "cpu-torch2.8"),
        (GPU_HOST, "cpu-torch2.8"),
    ]
    assert all(c["counts"] == counts(passed=1) for c in report.matrix["cells"])
    assert report.totals == counts(passed=2)


def test_sidecar_key_wins_over_properties_and_mismatch_is_reported(tmp_path):
    results = [CaseResult("arch", "arch[device=cpu]", Outcome.PASSED, 1.0)]
    xml = write_run(
        tmp_path / "run-1",
        results,
        host_key=CPU_HOST,
        variant_id="cpu-torch2.8",
        properties={"host.key": "something else"},
        logs=False,
    )
    report = build_report([xml], now=NOW)
    assert [(c.host, c.variant) for c in report.cells] == [(CPU_HOST, "cpu-torch2.8")]
    assert len(report.problems) == 1
    path, reason = report.problems[0]
    assert path == xml.as_posix()
    assert "differs from property host.key 'something else'" in reason


def test_without_sidecar_cells_are_keyed_from_testsuite_properties(tmp_path):
    results = [
        CaseResult(
            "arch", "arch[device=cpu]", Outcome.FAILED, 1.0, "no kernel image", "no_kernel_image"
        )
    ]
    write_run(
        tmp_path / "run-9",
        results,
        host_key=GPU_HOST,
        variant_id="cu126-torch2.7",
        sidecar=False,
        logs=False,
    )
    report = build_report([tmp_path], now=NOW)
    assert [(c.host, c.variant, c.state) for c in report.cells] == [
        (GPU_HOST, "cu126-torch2.7", "failed")
    ]
    assert report.matrix["cells"][0]["cases"][0]["signature"] == "no_kernel_image"


def test_a_newer_run_of_ours_supersedes_an_older_one_with_the_same_key(tmp_path):
    older = write_run(
        tmp_path / "run-1",
        [CaseResult("losses", "losses[dice]", Outcome.PASSED, 1.0)],
        host_key=CPU_HOST,
        variant_id="cpu-torch2.8",
        logs=False,
        started="2025-06-01T10:00:00+00:00",
    )
    newer = write_run(
        tmp_path / "run-2",
        [
            CaseResult("losses", "losses[dice]", Outcome.FAILED, 1.0, "grad is nan", "nan_grad"),
            CaseResult("losses", "losses[bce]", Outcome.SKIPPED, 0.0, "not needed"),
        ],
        host_key=CPU_HOST,
        variant_id="cpu-torch2.8",
        logs=False,
        started="2025-06-02T10:00:00+00:00",
    )
    report = build_report([tmp_path], now=NOW)
    assert len(report.matrix["cells"]) == 1
    cell = report.matrix["cells"][0]
    assert cell["counts"] == counts(failed=1, skipped=1)
    assert cell["files"] == [newer.as_posix()]
    states = {item["path"]: item["state"] for item in report.matrix["inputs"]}
    assert states == {older.as_posix(): "superseded", newer.as_posix(): "ok"}


def test_two_foreign_files_with_the_same_key_add_up_in_one_cell(tmp_path):
    for name, body in (
        ("a.xml", '<testsuite name="s"><testcase classname="c" name="one"/></testsuite>'),
        (
            "b.xml",
            '<testsuite name="s"><testcase classname="c" name="two"><failure message="x"/></testcase></testsuite>',
        ),
    ):
        (tmp_path / "pytest-cpu").mkdir(exist_ok=True)
        (tmp_path / "pytest-cpu" / name).write_text(body)
    report = build_report([tmp_path], now=NOW)
    assert len(report.matrix["cells"]) == 1
    cell = report.matrix["cells"][0]
    assert (cell["variant"], cell["counts"]["passed"], cell["counts"]["failed"]) == (
        "pytest-cpu",
        1,
        1,
    )
    assert len(cell["files"]) == 2


def test_incomplete_run_is_flagged_but_its_cases_count(tmp_path):
    xml = write_run(
        tmp_path / "run-1",
        [CaseResult("model", "model[device=cpu]", Outcome.PASSED, 9.0)],
        host_key=CPU_HOST,
        variant_id="cpu-torch2.8",
        logs=False,
    )
    run = json.loads((tmp_path / "run-1" / "run.json").read_text())
    run.update(finished=None, cases_total=12, cases_done=1)
    (tmp_path / "run-1" / "run.json").write_text(json.dumps(run))
    report = build_report([xml], now=NOW)
    assert report.totals["tests"] == 1
    assert report.problems == [(xml.as_posix(), "run incomplete: 1 of 12 cases done")]


def test_log_paths_that_leave_the_run_directory_are_dropped(tmp_path):
    results = [
        CaseResult("shm", "shm[a]", Outcome.FAILED, 1.0, "x", "sig", log_path="../../etc/passwd"),
        CaseResult("shm", "shm[b]", Outcome.FAILED, 1.0, "x", "sig", log_path="/etc/passwd"),
    ]
    write_run(tmp_path / "run-1", results, host_key=CPU_HOST, variant_id="cpu-torch2.8", logs=False)
    report = build_report([tmp_path], now=NOW)
    assert [c["log"] for c in report.matrix["cells"][0]["cases"]] == [None, None]


# ------------------------------------------------------------------------------------------
# Foreign JUnit


def test_pytest_junitxml_keyed_by_directory_with_unknown_host(tmp_path):
    copy_fixture("pytest.xml", tmp_path / "pytest-cpu" / "junit.xml")
    report = build_report([tmp_path], now=NOW)
    assert [(c.host, c.variant) for c in report.cells] == [("unknown host", "pytest-cpu")]
    cell = report.matrix["cells"][0]
    assert cell["counts"] == counts(passed=1, failed=1, error=1, skipped=1)
    assert cell["state"] == "error"
    by_case = {c["case"]: c for c in cell["cases"]}
    assert by_case["test_loss_is_finite"]["scenario"] == "tests.test_model"
    assert (
        by_case["test_loss_is_finite"]["signature"] == "unknown"
    )  # pytest writes no type on failures
    assert by_case["test_loss_is_finite"]["message"] == "AssertionError: assert 'nan|inf' == 'ok'"
    assert by_case["test_cuda_only"]["signature"] == "pytest.skip"
    assert by_case["test_loader"]["message"].startswith("failed on setup with")
    assert by_case["test_forward"]["time_s"] == 0.011


def test_gtest_notrun_skipped_attributes_and_unnamed_pseudo_test(tmp_path):
    copy_fixture("gtest.xml", tmp_path / "gtest" / "test_detail.xml")
    report = build_report([tmp_path], now=NOW)
    cell = report.matrix["cells"][0]
    # 6 <testcase> elements although the suites declare 5 + 0 tests.
    assert cell["counts"] == counts(passed=1, failed=2, skipped=3)
    by_case = {c["case"]: c for c in cell["cases"]}
    assert by_case["DISABLED_Slow"]["outcome"] == "skipped"  # status="notrun" result="suppressed"
    assert by_case["NeedsTwoGpus"]["outcome"] == "skipped"  # result="skipped", no child
    assert by_case[""]["outcome"] == "failed"
    assert by_case["Divides"]["signature"] == "unknown"  # type=""
    assert by_case["Divides"]["message"].startswith("kernel_test.cc:12\nExpected equality")


def test_ctest_single_testsuite_with_disabled_status(tmp_path):
    copy_fixture("ctest.xml", tmp_path / "ctest" / "ctest.xml")
    report = build_report([tmp_path], now=NOW)
    cell = report.matrix["cells"][0]
    assert cell["counts"] == counts(passed=1, failed=1, skipped=2)
    by_case = {c["case"]: c for c in cell["cases"]}
    assert by_case["bench_slow"]["outcome"] == "skipped"
    assert by_case["tool_missing"]["message"] == "Unable to find executable: /build/tool_missing"


def test_surefire_report_flaky_counts_as_passed_and_jvm_properties_ignored(tmp_path):
    copy_fixture(
        "TEST-com.example.TensorTest.xml",
        tmp_path / "surefire-reports" / "TEST-com.example.TensorTest.xml",
    )
    report = build_report([tmp_path], now=NOW)
    cell = report.matrix["cells"][0]
    assert cell["variant"] == "surefire-reports"
    assert cell["counts"] == counts(passed=2, failed=1, skipped=1)
    by_case = {c["case"]: c for c in cell["cases"]}
    assert by_case["dtypeRoundTrip"]["signature"] == "org.opentest4j.AssertionFailedError"
    assert by_case["dtypeRoundTrip"]["message"] == "expected: <1.0> but was: <0.5>"
    assert by_case["flakyAlloc"]["outcome"] == "passed"
    assert report.matrix["hosts"] == [{"key": "unknown host", "properties": {}}]
    assert report.matrix["variants"] == [{"id": "surefire-reports", "properties": {}}]


def test_namespaced_root_and_nested_testsuites(tmp_path):
    xml = tmp_path / "ns" / "junit.xml"
    xml.parent.mkdir()
    xml.write_text(
        '<?xml version="1.0"?>\n'
        '<j:testsuites xmlns:j="urn:example:junit"><j:testsuite name="outer">'
        '<j:testsuite name="inner"><j:testcase classname="c" name="a"/>'
        '<j:testcase classname="c" name="b"><j:failure type="Boom" message="boom"/></j:testcase>'
        "</j:testsuite></j:testsuite></j:testsuites>"
    )
    report = build_report([xml], now=NOW)
    assert report.matrix["cells"][0]["counts"] == counts(passed=1, failed=1)
    assert report.matrix["cells"][0]["cases"][1]["signature"] == "Boom"


def test_decimal_comma_time_is_recorded_null_with_a_warning(tmp_path):
    xml = tmp_path / "dotnet" / "junit.xml"
    xml.parent.mkdir()
    xml.write_bytes(
        b'\xef\xbb\xbf<?xml version="1.0" encoding="utf-8"?>\r\n<testsuite name="t">\r\n'
        b'<testcase classname="c" name="a" time="1,5"/>\r\n</testsuite>\r\n'
    )
    report = build_report([xml], now=NOW)
    assert report.matrix["cells"][0]["cases"][0]["time_s"] is None
    assert report.problems == [
        (xml.as_posix(), "testcase 'a': time '1,5' is not a number; recorded null")
    ]


# ------------------------------------------------------------------------------------------
# Invalid inputs


def test_bad_files_are_named_with_reason_and_the_rest_still_merge(tmp_path):
    good = write_run(
        tmp_path / "run-1",
        sample_results(),
        host_key=GPU_HOST,
        variant_id="cu128-torch2.8",
        logs=False,
    )
    bad = {
        "truncated": copy_fixture("truncated.xml", tmp_path / "truncated" / "junit.xml"),
        "laughs": copy_fixture("billion_laughs.xml", tmp_path / "laughs" / "junit.xml"),
        "xxe": copy_fixture("xxe.xml", tmp_path / "xxe" / "junit.xml"),
        "nunit": copy_fixture("nunit.xml", tmp_path / "nunit" / "TestResult.xml"),
    }
    empty_file = tmp_path / "zero" / "junit.xml"
    empty_file.parent.mkdir()
    empty_file.write_bytes(b"")
    no_tests = copy_fixture("empty_testsuites.xml", tmp_path / "empty" / "junit.xml")

    report = build_report([tmp_path], now=NOW)
    problems = dict(report.problems)
    assert set(problems) == {p.as_posix() for p in [*bad.values(), empty_file]}
    assert re.fullmatch(
        r"not well-formed XML: unclosed token: line \d+, column \d+ \(truncated\?\)",
        problems[bad["truncated"].as_posix()],
    )
    assert problems[bad["laughs"].as_posix()].startswith(
        "DOCTYPE/entity declaration at line 2 not allowed"
    )
    assert "nothing was expanded or fetched" in problems[bad["xxe"].as_posix()]
    assert problems[bad["nunit"].as_posix()] == "root <test-run> is not JUnit (NUnit?)"
    assert problems[empty_file.as_posix()] == "empty file"

    inputs = {i["path"]: i for i in report.matrix["inputs"]}
    assert inputs[good.as_posix()]["state"] == "ok"
    assert inputs[no_tests.as_posix()]["state"] == "no tests"
    assert all(inputs[p.as_posix()]["state"] == "invalid" for p in bad.values())
    states = {(c["host"], c["variant"]): c["state"] for c in report.matrix["cells"]}
    assert states[(GPU_HOST, "cu128-torch2.8")] == "hung"
    assert states[("unknown host", "empty")] == "no tests"
    assert states[("unknown host", "truncated")] == "invalid"
    assert states[("unknown host", "nunit")] == "invalid"
    assert report.totals == counts(passed=1, failed=1, error=1, crashed=1, hung=1, skipped=1)


def test_external_entity_and_entity_expansion_never_reach_the_outputs(tmp_path):
    copy_fixture("xxe.xml", tmp_path / "in" / "xxe" / "junit.xml")
    copy_fixture("billion_laughs.xml", tmp_path / "in" / "laughs" / "junit.xml")
    report = build_report([tmp_path / "in"], now=NOW)
    written = write_outputs(report, tmp_path / "out")
    passwd_lines = [line for line in Path("/etc/passwd").read_text().splitlines() if line.strip()]
    assert passwd_lines
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert "lollol" not in text
        for line in passwd_lines:
            assert line not in text
        assert "root:x:0:0" not in text


def test_file_over_size_cap_is_invalid_not_cut(tmp_path, monkeypatch):
    xml = copy_fixture("pytest.xml", tmp_path / "big" / "junit.xml")
    monkeypatch.setattr(reader_mod, "MAX_FILE_BYTES", 100)
    report = build_report([xml], now=NOW)
    assert report.matrix["inputs"][0]["state"] == "invalid"
    assert report.problems[0][1].startswith("over size cap")
    assert report.totals["tests"] == 0


def test_hidden_files_and_non_xml_files_are_skipped(tmp_path):
    write_run(
        tmp_path / "run-1",
        [CaseResult("arch", "arch[x]", Outcome.PASSED, 1.0)],
        host_key=CPU_HOST,
        variant_id="cpu-torch2.8",
        logs=False,
    )
    (tmp_path / "run-1" / ".junit.xml.abc123.tmp").write_text("<testsuites><testsuite>")
    (tmp_path / "run-1" / ".partial.xml").write_text("<testsuites><testsuite>")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "junit.xml").write_text("garbage")
    report = build_report([tmp_path], now=NOW)
    assert [i["path"] for i in report.matrix["inputs"]] == [
        (tmp_path / "run-1" / "junit.xml").as_posix()
    ]
    assert report.problems == []


def test_missing_input_path_raises_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no such file or directory"):
        build_report([tmp_path / "nope"])


def test_cell_states_follow_precedence(tmp_path):
    write_run(
        tmp_path / "skips",
        [CaseResult("ddp", "ddp[2]", Outcome.SKIPPED, 0.0, "needs 2 GPUs")],
        host_key=CPU_HOST,
        variant_id="cpu-torch2.8",
        logs=False,
    )
    # A passing file plus a truncated one under the same key must not look green.
    write_run(
        tmp_path / "mixed",
        [CaseResult("arch", "arch[x]", Outcome.PASSED, 1.0)],
        host_key=CPU_HOST,
        variant_id="cpu-torch2.7",
        logs=False,
    )
    broken = tmp_path / "mixed-broken"
    broken.mkdir()
    shutil.copy(tmp_path / "mixed" / "run.json", broken / "run.json")
    copy_fixture("truncated.xml", broken / "junit.xml")
    report = build_report([tmp_path], now=NOW)
    states = {c["variant"]: c["state"] for c in report.matrix["cells"]}
    assert states == {"cpu-torch2.8": "skipped", "cpu-torch2.7": "invalid"}
    assert (
        report.matrix["inputs"][0]["variant"] == "cpu-torch2.7"
    )  # invalid file keyed by its run.json


# ------------------------------------------------------------------------------------------
# Outputs


def test_totals_line_text(tmp_path):
    write_run(
        tmp_path / "run-1",
        sample_results(),
        host_key=GPU_HOST,
        variant_id="cu128-torch2.8",
        logs=False,
    )
    copy_fixture("pytest.xml", tmp_path / "pytest" / "junit.xml")
    report = build_report([tmp_path], now=NOW)
    assert (
        totals_line(report)
        == "problems: 6 (1 hung, 1 crashed, 2 errors, 2 failed) · expected reproductions: 0"
        " · passed: 2 · skipped: 2"
    )


def test_markdown_escapes_table_cells(tmp_path):
    write_run(
        tmp_path / "run-1",
        sample_results(),
        host_key="GPU | weird <host>",
        variant_id="cu128-torch2.8",
    )
    md = render_markdown(build_report([tmp_path], now=NOW))
    assert "CUDNN\\_STATUS\\_NOT\\_SUPPORTED \\| conv &lt;fp16&gt; \\`benchmark\\`" in md
    assert "**GPU \\| weird &lt;host&gt;**" in md
    assert "<fp16>" not in md and "<host>" not in md
    # Every table row still has the right number of unescaped separators.
    for line in md.splitlines():
        if line.startswith("| 🟥 failed"):
            assert len(re.findall(r"(?<!\\)\|", line)) == 5
    assert "🟪 1 hung · 1 crashed · 1 error · 1 failed · 1 passed · 1 skipped" in md
    assert "<details><summary>" in md


def test_markdown_stays_under_the_step_summary_limit(tmp_path):
    message = "x" * 600
    for h in range(15):
        for v in range(15):
            path = tmp_path / f"h{h}-v{v}" / "junit.xml"
            path.parent.mkdir()
            cases = "".join(
                f'<testcase classname="repro.s" name="c{i}"><failure type="sig{i}" message="{message}"/></testcase>'
                for i in range(60)
            )
            path.write_text(
                f'<testsuites><testsuite name="s"><properties><property name="host.key" value="host {h}"/>'
                f'<property name="variant.id" value="variant {v}"/></properties>{cases}</testsuite></testsuites>'
            )
    report = build_report([tmp_path], now=NOW)
    assert report.totals["failed"] == 15 * 15 * 60
    md = render_markdown(report)
    assert len(md.encode("utf-8")) < 1024 * 1024
    assert "… and 10 more" in md
    assert "more cells omitted" in md
    assert max(len(c["cases"][0]["message"]) for c in report.matrix["cells"]) == 500


def test_html_is_one_self_contained_file_with_relative_log_links(tmp_path):
    # Logs are linked only inside the output tree (``repro report results -o .``), see
    # tests/test_report_hostile.py for logs outside it.
    out = tmp_path / "site"
    results = out / "results"
    write_run(
        results / "run-1",
        sample_results(),
        host_key=GPU_HOST,
        variant_id="cu128-torch2.8",
    )
    (results / "run-1" / "logs" / "cudnn-1.log").unlink()  # one log went missing
    copy_fixture("pytest.xml", results / "pytest" / "junit.xml")
    copy_fixture("nunit.xml", results / "nunit" / "junit.xml")
    written = write_outputs(build_report([results], now=NOW), out)
    assert sorted(p.name for p in out.iterdir()) == [
        "matrix.html",
        "matrix.json",
        "matrix.md",
        "results",
    ]
    assert written == [out / "matrix.json", out / "matrix.md", out / "matrix.html"]
    page = (out / "matrix.html").read_text(encoding="utf-8")

    assert not re.search(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert "<script src" not in page
    hrefs = re.findall(r'href="([^"#][^"]*)"', page)
    assert hrefs, "expected links to the logs"
    for href in hrefs:
        assert not re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I)
        assert (out / urllib.parse.unquote(href)).is_file()
    assert len(hrefs) == 2  # dataloader fork-2 and fork-4; the cudnn log is missing
    assert "position: sticky" in page
    assert 'class="cell s-hung"' in page and 'class="cell s-missing"' in page
    assert 'class="cell s-invalid"' in page
    assert "Inputs with problems" in page and "root &lt;test-run&gt; is not JUnit (NUnit?)" in page
    # Hover text carries signatures and messages, escaped inside the attribute.
    assert "failed ×1 cudnn_not_supported: CUDNN_STATUS_NOT_SUPPORTED | conv &lt;fp16&gt;" in page
    assert "it_per_s=41.5" in page


def test_html_escapes_untrusted_text(tmp_path):
    xml = tmp_path / "evil" / "junit.xml"
    xml.parent.mkdir()
    xml.write_text(
        '<testsuite name="x"><testcase classname="c" name="&lt;script&gt;alert(1)&lt;/script&gt;">'
        '<failure type="&quot; onmouseover=&quot;x" message="&lt;img src=x onerror=alert(1)&gt;"/></testcase></testsuite>'
    )
    page = render_html(build_report([xml], now=NOW), tmp_path)
    assert "<script>alert(1)" not in page
    assert "<img src=x" not in page
    assert '" onmouseover="x' not in page


def test_json_is_canonical_sorted_and_versioned(tmp_path):
    write_run(
        tmp_path / "run-1",
        sample_results(),
        host_key=GPU_HOST,
        variant_id="cu128-torch2.8",
        logs=False,
    )
    report = build_report([tmp_path], now=NOW)
    text = render_json(report)
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert data["schema_version"] == 2
    assert data["generator"] == GENERATOR
    assert data["generated_at"] == "2025-06-01T12:00:00+00:00"
    assert data["totals"] == report.totals
    assert render_json(build_report([tmp_path], now=NOW)) == text


# ------------------------------------------------------------------------------------------
# Command line


def test_main_exits_zero_with_problems_and_prints_them(tmp_path, capsys):
    write_run(
        tmp_path / "in" / "run-1", sample_results(), host_key=GPU_HOST, variant_id="cu128-torch2.8"
    )
    broken = copy_fixture("truncated.xml", tmp_path / "in" / "broken" / "junit.xml")
    out = tmp_path / "out"
    assert main([str(tmp_path / "in"), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    err_lines = captured.err.splitlines()
    assert len(err_lines) == 1
    assert err_lines[0].startswith(
        f"repro report: {broken.as_posix()}: not well-formed XML: unclosed token: line "
    )
    out_lines = captured.out.splitlines()
    assert out_lines == [
        str(out / "matrix.json"),
        str(out / "matrix.md"),
        str(out / "matrix.html"),
        "problems: 4 (1 hung, 1 crashed, 1 error, 1 failed) · expected reproductions: 0"
        " · passed: 1 · skipped: 1",
    ]


def test_main_missing_input_exits_2_with_one_line(tmp_path, capsys):
    assert main([str(tmp_path / "does-not-exist"), "-o", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        captured.err == f"repro: error: {tmp_path / 'does-not-exist'}: no such file or directory\n"
    )
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------
# Golden files


#: A hung case's log as repro.runner.executor writes it: the case's output, the watchdog's
#: per-process stack dumps (faulthandler format), then 40 lines of kernel log tail.
HUNG_LOG = (
    "dataloader: start_method=fork workers=4 persistent=0 cuda_init=1\n"
    "phase: first_batch\n"
    "\n# repro watchdog: dumping stacks of 2 process(es)\n"
    "# --- stacks of pid 41877 (wchan futex_wait_queue): python -m repro.runner.harness ---\n"
    "Thread 0x00007f1c2effd6c0 (most recent call first):\n"
    '  File "/usr/lib/python3.12/threading.py", line 359 in wait\n'
    '  File "/usr/lib/python3.12/queue.py", line 180 in get\n'
    '  File "/opt/venv/lib/python3.12/site-packages/torch/utils/data/_utils/pin_memory.py", line 52 in do_one_step\n'
    "\n"
    "Current thread 0x00007f1c3a5b2740 (most recent call first):\n"
    '  File "/usr/lib/python3.12/multiprocessing/connection.py", line 1136 in wait\n'
    '  File "/opt/venv/lib/python3.12/site-packages/torch/utils/data/dataloader.py", line 1284 in _try_get_data\n'
    '  File "/opt/venv/lib/python3.12/site-packages/torch/utils/data/dataloader.py", line 1457 in _next_data\n'
    '  File "/work/repro/scenarios/dataloader.py", line 141 in run\n'
    "# --- stacks of pid 41902 (wchan futex_wait_queue): python (DataLoader worker 0) ---\n"
    "Thread 0x00007f1c3a5b2740 (most recent call first):\n"
    '  File "/usr/lib/python3.12/logging/__init__.py", line 1022 in acquire\n'
    "# repro watchdog: process tree killed\n"
    "# repro watchdog: kernel log tail\n"
    + "".join(
        f'[{81234.5 + i:.6f}] audit: type=1400 apparmor="ALLOWED" operation="open" '
        f'profile="snap.code" name="/proc/{4000 + i}/status" pid={4000 + i}\n'
        for i in range(40)
    )
)


def make_golden_inputs(root: Path) -> None:
    """The fixed inputs of the golden test (rewritten only with REPRO_UPDATE_GOLDEN=1)."""
    if root.exists():
        shutil.rmtree(root)
    results = sample_results()
    for result in results:
        if result.outcome is Outcome.HUNG:
            result.detail = HUNG_LOG
    write_run(root / "run-a", results, host_key=GPU_HOST, variant_id="cu128-torch2.8")
    (root / "run-a" / "logs" / "dataloader-fork-4.log").write_text(HUNG_LOG, encoding="utf-8")
    cpu_results = [
        CaseResult("cuda_basic", "cuda_basic[device=cpu]", Outcome.PASSED, 0.5),
        CaseResult("model", "model[device=cpu]", Outcome.PASSED, 12.0, metrics={"it_per_s": 3.5}),
        CaseResult(
            "ddp",
            "ddp[ranks=2]",
            Outcome.FAILED,
            8.0,
            "EADDRINUSE: port 29500 | in use",
            "eaddrinuse",
        ),
    ]
    write_run(root / "run-b", cpu_results, host_key=CPU_HOST, variant_id="cpu-torch2.8")
    write_run(
        root / "run-c",
        [CaseResult("cuda_basic", "cuda_basic[device=cpu]", Outcome.PASSED, 0.4)],
        host_key=GPU_HOST,
        variant_id="cpu-torch2.8",
        sidecar=False,
    )
    # A newer run of the same (host, variant): its cuda_basic result supersedes run-b's, run-b's
    # other cases stay (the newest result per case wins).
    write_run(
        root / "run-d",
        [
            CaseResult("cuda_basic", "cuda_basic[device=cpu]", Outcome.PASSED, 0.6),
            CaseResult("shm", "shm[shm_size=64m]", Outcome.SKIPPED, 0.0, "docker not available"),
        ],
        host_key=CPU_HOST,
        variant_id="cpu-torch2.8",
        started="2025-06-01T10:30:00+00:00",
    )
    copy_fixture("pytest.xml", root / "pytest-cpu" / "junit.xml")
    copy_fixture("truncated.xml", root / "broken" / "junit.xml")
    copy_fixture("empty_testsuites.xml", root / "empty" / "junit.xml")
    copy_fixture("truncated.xml", root / "run-a" / ".junit.xml.k2j3.tmp")


def _normalised_json(text: str) -> str:
    return text.replace(json.dumps(GENERATOR), '"repro-matrix VERSION"')


def test_golden_matrix_json_and_md(monkeypatch):
    update = os.environ.get("REPRO_UPDATE_GOLDEN") == "1"
    if update:
        make_golden_inputs(GOLDEN / "inputs")
    monkeypatch.chdir(GOLDEN)
    report = build_report([Path("inputs")], now=NOW)
    actual = {
        "matrix.json": _normalised_json(render_json(report)),
        "matrix.md": render_markdown(report),
    }
    expected_dir = GOLDEN / "expected"
    if update:
        expected_dir.mkdir(parents=True, exist_ok=True)
        for name, text in actual.items():
            (expected_dir / name).write_text(text, encoding="utf-8")
    for name, text in actual.items():
        assert text == (expected_dir / name).read_text(encoding="utf-8"), (
            f"{name} differs from the golden file; rerun with REPRO_UPDATE_GOLDEN=1 if the change is intended"
        )


# ------------------------------------------------------------------------------------------
# Expected failures (matrix.yaml `expect:`)

REPO = Path(__file__).resolve().parent.parent
H100_OLD = "NVIDIA H100 80GB HBM3 · driver 535.104.05 · Ubuntu 22.04.4 LTS"
H100_NEW = "NVIDIA H100 80GB HBM3 · driver 580.65.06 · Ubuntu 24.04.1 LTS"


def h100_properties(driver: str) -> dict[str, str]:
    return {
        "host.driver.nvidia": driver,
        "host.gpu_count": "1",
        "host.gpu.0.name": "NVIDIA H100 80GB HBM3",
        "host.gpu.0.vendor": "nvidia",
        "host.gpu.0.compute_capability": "9.0",
        "variant.torch": "2.10.0",
    }


def write_config(path: Path, expect: str = "", variants: str | None = None) -> Path:
    path.write_text(
        "version: 1\nvariants:\n"
        + (
            variants
            or '  - {runtime: cpu, torch: "2.8.0", base_image: "python:3.12-slim"}\n'
            '  - {runtime: cu128, torch: "2.8.0", base_image: "nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04"}\n'
        )
        + ("expect:\n" + expect if expect else "")
    )
    return path


DELIBERATE = (
    "  - case: 'fork_safety[start_method=fork]'\n"
    "    outcome: hung\n"
    "    reason: fork while a thread holds a lock\n"
    "    link: https://github.com/wandb/wandb/issues/12079\n"
    "  - case: 'ddp[backend=*,fault=rank_raises]'\n"
    "    outcome: failed\n"
    "    signature: rank_failed\n"
    "    reason: planted fault, the launcher must exit non-zero\n"
    "  - {case: 'ddp[backend=*,fault=port_in_use]', outcome: failed, reason: port taken}\n"
    "  - {scenario: 'cudnn', variant: 'rocm*', reason: never matches here}\n"
)


def deliberate_results(port_in_use: Outcome = Outcome.FAILED) -> list[CaseResult]:
    return [
        CaseResult("cuda_basic", "cuda_basic[device=cpu]", Outcome.PASSED, 1.0),
        CaseResult(
            "fork_safety",
            "fork_safety[start_method=fork]",
            Outcome.HUNG,
            15.0,
            "no verdict",
            "hang_timeout",
        ),
        CaseResult("fork_safety", "fork_safety[start_method=spawn]", Outcome.PASSED, 1.0),
        CaseResult(
            "ddp",
            "ddp[backend=gloo,fault=rank_raises]",
            Outcome.FAILED,
            8.0,
            "launcher exit 0",
            "address_in_use",  # not the signature the entry expects
        ),
        CaseResult("ddp", "ddp[backend=gloo,fault=port_in_use]", port_in_use, 2.0),
    ]


def test_expected_failures_are_not_red_and_unexpected_passes_are_flagged(tmp_path):
    from repro import config as matrix

    config = matrix.load(write_config(tmp_path / "matrix.yaml", DELIBERATE))
    write_run(
        tmp_path / "in" / "run-1",
        deliberate_results(Outcome.FAILED),
        host_key=CPU_HOST,
        variant_id="cpu-torch2.8",
    )
    write_run(
        tmp_path / "in" / "run-2",
        deliberate_results(Outcome.PASSED),
        host_key=GPU_HOST,
        variant_id="cpu-torch2.8",
    )
    report = build_report([tmp_path / "in"], now=NOW, config=config)

    cpu, gpu = (report.cell(host, "cpu-torch2.8") for host in (CPU_HOST, GPU_HOST))
    statuses = {c.case: c.expect_status for c in cpu.cases}
    assert statuses == {
        "cuda_basic[device=cpu]": None,
        "fork_safety[start_method=fork]": "expected",
        "fork_safety[start_method=spawn]": None,
        "ddp[backend=gloo,fault=rank_raises]": "other outcome",  # wrong signature: still red
        "ddp[backend=gloo,fault=port_in_use]": "expected",
    }
    assert (cpu.state, cpu.effective_state) == ("hung", "failed")
    assert gpu.effective_state == "failed"
    # Only the wrong-signature case keeps the cells red; without it they would be expected /
    # unexpectedly passing.
    for cell in (cpu, gpu):
        cell.cases = [c for c in cell.cases if "rank_raises" not in c.case]
    assert cpu.effective_state == "expected"
    assert gpu.effective_state == "unexpectedly passing"
    assert dict(gpu.display_counts()) == {"unexpectedly passing": 1, "expected": 1, "passed": 2}

    data = report.matrix
    fork = next(
        c for c in data["cells"][0]["cases"] if c["case"] == "fork_safety[start_method=fork]"
    )
    assert fork["expect"] == {"rule": 0, "status": "expected"}
    entries = {e["index"]: e for e in data["expectations"]}
    assert entries[0]["link"] == "https://github.com/wandb/wandb/issues/12079"
    assert (entries[2]["expected"], entries[2]["unexpectedly_passing"]) == (1, 1)
    assert entries[3]["matched"] == 0
    assert report.warnings == [
        f"{config.path}: coverage: variant cu128-torch2.8 has no result",
        f"{config.path}: coverage: runtime cu128 has no result (cu128-torch2.8)",
        f"{config.path}: expect[3] (scenario 'cudnn', variant 'rocm*') matched no case in these results",
    ]
    assert totals_line(report) == (
        "problems: 0 · expected reproductions: 3 · passed: 4 · skipped: 0 · unexpectedly passing: 1"
    )


def test_expected_cells_render_as_expected_in_markdown_and_html(tmp_path):
    from repro import config as matrix

    config = matrix.load(write_config(tmp_path / "matrix.yaml", DELIBERATE))
    results = [r for r in deliberate_results(Outcome.PASSED) if "rank_raises" not in r.case_id]
    write_run(tmp_path / "in" / "run-1", results, host_key=CPU_HOST, variant_id="cpu-torch2.8")
    report = build_report([tmp_path / "in"], now=NOW, config=config)
    md = render_markdown(report)
    assert "🟨 1 unexpectedly passing · 1 expected · 2 passed" in md
    assert "## Expected reproductions (matrix.yaml `expect`)" in md
    assert "([link](https://github.com/wandb/wandb/issues/12079))" in md
    assert "| 🟨 unexpectedly passing | ddp\\[backend=gloo,fault=port\\_in\\_use\\] |" in md
    assert "| 🟦 expected reproduction | " in md
    assert "## Warnings" in md and "coverage: variant cu128-torch2.8 has no result" in md
    page = render_html(report, tmp_path)
    assert 'class="cell s-unexpectedly-passing"' in page
    assert 'class="badge s-expected">expected</span>' in page
    assert "expected: expected hung — fork while a thread holds a lock" in page
    assert 'href="https://github.com/wandb/wandb/issues/12079"' in page


def test_report_main_takes_config_and_prints_warnings(tmp_path, capsys):
    config = write_config(tmp_path / "matrix.yaml", DELIBERATE)
    write_run(
        tmp_path / "in" / "run-1",
        deliberate_results(),
        host_key=CPU_HOST,
        variant_id="cpu-torch2.8",
    )
    out = tmp_path / "out"
    assert main([str(tmp_path / "in"), "-o", str(out), "--config", str(config)]) == 0
    captured = capsys.readouterr()
    assert (
        f"repro report: warning: {config}: coverage: variant cu128-torch2.8 has no result"
        in captured.err
    )
    assert captured.out.splitlines()[-1] == (
        "problems: 1 (1 failed) · expected reproductions: 2 · passed: 2 · skipped: 0"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nexpect:\n  - {case: x, outcome: broken}\n")
    assert main([str(tmp_path / "in"), "-o", str(out), "--config", str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"repro: error: {bad}: expect[0].outcome: expected one of failed, hung, crashed, error, any-problem, got 'broken'",
        f"repro: error: {bad}: expect[0].reason: expected a non-empty string saying why the case fails (the known incompatibility), got nothing (null)",
    ]


def test_expect_entries_are_validated_all_at_once(tmp_path):
    from repro import config as matrix

    path = write_config(
        tmp_path / "matrix.yaml",
        "  - {variant: 'cu*', reason: ok}\n"
        "  - {case: '', outcome: failed, reason: x, link: 'ftp://host/x', color: red}\n"
        "  - just a string\n"
        "  - {case: 'ddp[*', signature: 7, reason: '  '}\n",
    )
    with pytest.raises(ConfigError) as info:
        matrix.load(path)
    assert str(info.value).splitlines() == [
        f'{path}: expect[0]: expected a `case` glob (e.g. "ddp[backend=*,fault=rank_raises]") or a `scenario` glob',
        f"{path}: expect[1].color: unknown key (expected one of: case, host, link, outcome, reason, scenario, signature, strict, variant)",
        f"{path}: expect[1].case: expected a non-empty glob string (* and ? are wildcards, brackets are literal), got ''",
        f"{path}: expect[1].link: expected an http(s) URL of the issue or document behind the reason, got 'ftp://host/x'",
        f"{path}: expect[2]: expected a mapping with case (or scenario), outcome, reason and link, got 'just a string'",
        f"{path}: expect[3].signature: expected a non-empty glob string (* and ? are wildcards, brackets are literal), got 7 (a YAML number)",
        f"{path}: expect[3].reason: expected a non-empty string saying why the case fails (the known incompatibility), got '  '",
    ]
    # Brackets in a case glob are literal: "[fork]" is not a character class.
    entry = matrix.Expectation(0, "r", case="fork_safety[start_method=fork]")
    assert entry.matches(
        scenario="fork_safety", case="fork_safety[start_method=fork]", variant="v", host="h"
    )
    assert not entry.matches(scenario="fork_safety", case="fork_safetyk", variant="v", host="h")


def test_the_shipped_matrix_yaml_still_loads_with_the_expect_key():
    from repro import config as matrix

    config = matrix.load(REPO / "matrix.yaml")
    assert all(isinstance(e, matrix.Expectation) for e in config.expectations)


# ------------------------------------------------------------------------------------------
# Coverage, predictions, history


def test_coverage_warns_per_variant_runtime_and_torch_pin_without_results(tmp_path):
    from repro import config as matrix

    variants = (
        '  - {runtime: cu126, torch: "2.8.0", base_image: a}\n'
        '  - {runtime: cu128, torch: "2.8.0", base_image: a}\n'
        '  - {runtime: cu128, torch: "2.10.0", base_image: a}\n'
        '  - {runtime: rocm6.4, torch: "2.8.0", base_image: b}\n'
    )
    config = matrix.load(write_config(tmp_path / "matrix.yaml", variants=variants))
    results = [CaseResult("cuda_basic", "cuda_basic[device=cpu]", Outcome.PASSED, 1.0)]
    write_run(
        tmp_path / "in" / "a",
        results,
        host_key=CPU_HOST,
        variant_id="cu128-torch2.8",
        properties={"variant.torch": "2.8.0"},
        sidecar=False,
    )
    write_run(
        tmp_path / "in" / "b",
        results,
        host_key=CPU_HOST,
        variant_id="cu126-torch2.8",
        properties={"variant.torch": "2.8.0"},
        sidecar=False,
    )
    report = build_report([tmp_path / "in"], now=NOW, config=config)
    where = str(config.path)
    assert report.warnings == [
        f"{where}: coverage: variant cu128-torch2.10 has no result",
        f"{where}: coverage: variant rocm6.4-torch2.8 has no result",
        f"{where}: coverage: runtime rocm6.4 has no result (rocm6.4-torch2.8)",
        f"{where}: coverage: torch 2.10.0 has no result (cu128-torch2.10)",
    ]
    assert report.matrix["warnings"] == report.warnings
    # Without a config there is nothing to cover.
    assert build_report([tmp_path / "in"], now=NOW).warnings == []


def test_predictions_flag_disagreements_in_both_directions(tmp_path):
    def run(name: str, host: str, driver: str, cuda_outcome: Outcome) -> None:
        results = [
            CaseResult("cuda_basic", "cuda_basic[device=cpu]", Outcome.PASSED, 1.0),
            CaseResult(
                "cuda_basic",
                "cuda_basic[device=cuda]",
                cuda_outcome,
                1.0,
                "no kernel image" if cuda_outcome is Outcome.FAILED else "",
                "no_kernel_image" if cuda_outcome is Outcome.FAILED else "",
            ),
        ]
        write_run(
            tmp_path / "in" / name,
            results,
            host_key=host,
            variant_id="cu130-torch2.10",
            properties=h100_properties(driver),
            sidecar=False,
            logs=False,
        )

    run("old", H100_OLD, "535.104.05", Outcome.PASSED)  # the facts say this cannot work
    run("new", H100_NEW, "580.65.06", Outcome.FAILED)  # the facts say this must work
    report = build_report([tmp_path / "in"], now=NOW)
    views = {host: report.predictions[(host, "cu130-torch2.10")] for host in (H100_OLD, H100_NEW)}
    assert (views[H100_OLD].prediction.outcome, views[H100_OLD].observed) == ("fail", "pass")
    assert views[H100_OLD].disagreement == "predicted to fail but passed"
    assert (views[H100_NEW].prediction.outcome, views[H100_NEW].observed) == ("pass", "fail")
    assert views[H100_NEW].disagreement == "predicted to pass but failed"

    by_host = {p["host"]: p for p in report.matrix["predictions"]}
    old = by_host[H100_OLD]
    assert old["predicted"] == "fail" and old["disagreement"] == "predicted to fail but passed"
    assert old["reasons"][0]["fact"] == "cuda_min_driver.13.0.family_min.linux"
    assert old["reasons"][0]["unverified"] is False

    md = render_markdown(report)
    assert "1 pass, 1 fail, 0 unknown; 2 disagreements" in md
    assert "| ⚠️ predicted to fail but passed | driver 535.104.05 is older than 580" in md
    assert "🟩 1 passed · 1 passed · ⚠️ predicted fail" not in md  # labels stay readable
    assert "🟩 2 passed · ⚠️ predicted fail" in md
    assert "🟥 1 failed · 1 passed · ⚠️ predicted pass" in md
    page = render_html(report, tmp_path)
    assert "⚠ predicted to pass but failed" in page
    assert page.count('data-flags="disagree"') == 4  # two matrix cells, two drill-downs


def test_expected_failures_do_not_count_against_a_prediction(tmp_path):
    results = [
        CaseResult("cuda_basic", "cuda_basic[device=cuda]", Outcome.PASSED, 1.0),
        CaseResult(
            "dataloader",
            "dataloader[device=cuda,start_method=fork,accel_init=1]",
            Outcome.FAILED,
            1.0,
            "no kernel image",
            "no_kernel_image",
        ),
    ]
    write_run(
        tmp_path / "in" / "r",
        results,
        host_key=H100_NEW,
        variant_id="cu130-torch2.10",
        properties=h100_properties("580.65.06"),
        sidecar=False,
        logs=False,
    )
    from repro.config import Expectation

    known = [
        Expectation(
            0,
            "the wheel's arch list lacks this GPU on purpose",
            "failed",
            case="dataloader[*accel_init=1*",
        )
    ]
    assert (
        build_report([tmp_path / "in"], now=NOW)
        .predictions[(H100_NEW, "cu130-torch2.10")]
        .disagreement
        == "predicted to pass but failed"
    )
    view = build_report([tmp_path / "in"], now=NOW, expectations=known).predictions[
        (H100_NEW, "cu130-torch2.10")
    ]
    assert (view.observed, view.disagreement) == ("pass", None)


@pytest.mark.parametrize(
    "signature, disagrees",
    [
        ("unknown", False),  # a user's script failing for a reason no row names
        ("cuda_reinit_in_forked_subprocess", False),  # the script's own start-method bug
        ("inductor_compile_error", False),
        ("driver_too_old", True),
        ("container_gpu_setup", True),
        ("wsl_gpu_unavailable", True),
    ],
)
def test_only_environment_failures_contradict_a_pass_prediction(tmp_path, signature, disagrees):
    """Issue 21, item 7: the facts predict whether the environment can work; a failure in the
    user's own code is observed as a fail but never sends the reader to a fine environment."""
    results = [
        CaseResult("cuda_basic", "cuda_basic[device=cpu]", Outcome.PASSED, 1.0),
        CaseResult("mine", "mine[device=cuda]", Outcome.FAILED, 1.0, "boom", signature),
    ]
    write_run(
        tmp_path / "in" / "r",
        results,
        host_key=H100_NEW,
        variant_id="cu130-torch2.10",
        properties=h100_properties("580.65.06"),
        sidecar=False,
        logs=False,
    )
    view = build_report([tmp_path / "in"], now=NOW).predictions[(H100_NEW, "cu130-torch2.10")]
    assert (view.prediction.outcome, view.observed) == ("pass", "fail")
    expected = "predicted to pass but failed" if disagrees else None
    assert view.disagreement == expected


def test_history_keeps_the_previous_matrix_and_marks_changes_and_red_streaks(tmp_path, capsys):
    history, out = tmp_path / "history", tmp_path / "site"

    def report_run(name: str, x: Outcome, y: Outcome) -> dict:
        inputs = tmp_path / name
        write_run(
            inputs / "x",
            [
                CaseResult(
                    "arch",
                    "arch[device=cpu]",
                    x,
                    1.0,
                    "m",
                    "sig" if x is not Outcome.PASSED else "",
                )
            ],
            host_key=CPU_HOST,
            variant_id="cpu-torch2.8",
            logs=False,
        )
        write_run(
            inputs / "y",
            [
                CaseResult(
                    "arch",
                    "arch[device=cpu]",
                    y,
                    1.0,
                    "m",
                    "sig" if y is not Outcome.PASSED else "",
                )
            ],
            host_key=GPU_HOST,
            variant_id="cpu-torch2.8",
            logs=False,
        )
        assert main([str(inputs), "-o", str(out), "--history", str(history)]) == 0
        return json.loads((out / "matrix.json").read_text())

    first = report_run("r1", Outcome.PASSED, Outcome.FAILED)
    assert first["history"] == {"runs": 0}
    assert not history.exists() or not list(history.iterdir())
    second = report_run("r2", Outcome.FAILED, Outcome.PASSED)
    kept = sorted(p.name for p in history.iterdir())
    assert len(kept) == 1 and re.fullmatch(r"matrix-\d{8}T\d{6}Z\.json", kept[0])
    assert json.loads((history / kept[0]).read_text()) == first
    trends = {c["host"]: c["trend"] for c in second["cells"]}
    assert trends[CPU_HOST] == {"previous": "passed", "change": "newly red", "red_runs": 1}
    assert trends[GPU_HOST] == {"previous": "failed", "change": "newly green", "red_runs": 0}
    third = report_run("r3", Outcome.HUNG, Outcome.PASSED)
    assert len(list(history.iterdir())) == 2  # same-second reports get a -N suffix, none is lost
    trends = {c["host"]: c["trend"] for c in third["cells"]}
    assert trends[CPU_HOST] == {"previous": "failed", "change": None, "red_runs": 2}
    assert third["history"] == {"runs": 2}
    md = (out / "matrix.md").read_text(encoding="utf-8")
    assert "🔁 red 2 runs in a row" in md
    assert "**Red several runs in a row** (1):" in md
    assert "red 2 runs in a row" in (out / "matrix.html").read_text(encoding="utf-8")
    capsys.readouterr()


# ------------------------------------------------------------------------------------------
# HTML at scale, plot, schema


def test_html_has_filters_drilldown_with_log_excerpt_and_a_throughput_plot(tmp_path):
    results = sample_results() + [
        CaseResult(
            "dataloader",
            f"dataloader[device=cpu,start_method={method},workers=2,persistent=0,accel_init=0]",
            Outcome.PASSED,
            2.0,
            metrics={"it_per_s": value},
        )
        for method, value in (("spawn", 20.0), ("forkserver", 25.0))
    ]
    write_run(
        tmp_path / "results" / "run-1", results, host_key=GPU_HOST, variant_id="cu128-torch2.8"
    )
    write_run(tmp_path / "results" / "run-2", results, host_key=CPU_HOST, variant_id="cpu-torch2.8")
    page = render_html(build_report([tmp_path / "results"], now=NOW), tmp_path / "results")
    assert '<select id="f-state">' in page and '<input type="search" id="f-sig"' in page
    assert (
        '<option value="hang_timeout">' not in page
        and '<option value="fork_after_thread_lock">' in page
    )
    assert (
        'data-state="hung" data-sigs="cudnn_not_supported fork_after_thread_lock sigbus unknown"'
        in page
    )
    assert "<summary>log excerpt</summary><pre>Thread 0x7f (most recent call first):" in page
    assert page.count("<svg ") == 2  # one chart per device: "-" (ids without device=) and cpu
    assert (
        "<title>cu128-torch2.8 · spawn · device=cpu: median 20 it/s (n=1, min 20, max 20)</title>"
        in page
    )
    for method in ("fork", "spawn", "forkserver"):
        assert f">{method}</text>" in page
    assert not re.search(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert "url(" not in page and "<script src" not in page


@pytest.mark.slow
def test_html_and_markdown_stay_usable_at_50_variants_by_20_hosts(tmp_path):
    for h in range(20):
        for v in range(50):
            cases = "".join(
                f'<testcase classname="repro.dataloader" name="dataloader[device=cpu,start_method={m},workers=2]">'
                f'<properties><property name="metric.it_per_s" value="{10 + h + v}"/></properties></testcase>'
                for m in ("fork", "spawn")
            ) + (
                '<testcase classname="repro.fork_safety" name="fork_safety[start_method=fork]">'
                f'<error type="hang_timeout" message="no verdict">{"stack " * 200}</error></testcase>'
            )
            path = tmp_path / f"h{h}" / f"v{v}" / "junit.xml"
            path.parent.mkdir(parents=True)
            path.write_text(
                f'<testsuites><testsuite name="s"><properties><property name="host.key" value="host {h:02d}"/>'
                f'<property name="variant.id" value="cu128-torch2.{v}"/></properties>{cases}</testsuite></testsuites>'
            )
    report = build_report([tmp_path], now=NOW)
    assert len(report.cells) == 1000
    md = render_markdown(report)
    assert len(md.encode("utf-8")) < 1024 * 1024
    page = render_html(report, tmp_path)
    assert page.count('<td class="cell s-error"') == 1000
    assert page.count('<tr><th scope="row"') == 20
    assert "position: sticky" in page
    assert page.count("<rect ") >= 100  # 50 variants x 2 start methods, plus the legend


def test_matrix_json_validates_against_the_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(shipped_data.MATRIX_SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())

    config = write_config(tmp_path / "matrix.yaml", DELIBERATE)
    inputs = tmp_path / "in"
    write_run(
        inputs / "run-1",
        sample_results(),
        host_key=GPU_HOST,
        variant_id="cu128-torch2.8",
        properties={"host.gpu.0.compute_capability": "8.9", "host.gpu.0.vendor": "nvidia"},
    )
    write_run(inputs / "run-2", deliberate_results(), host_key=CPU_HOST, variant_id="cpu-torch2.8")
    copy_fixture("pytest.xml", inputs / "pytest-cpu" / "junit.xml")
    copy_fixture("truncated.xml", inputs / "broken" / "junit.xml")
    out = tmp_path / "out"
    for _ in range(2):  # the second report has history and trends
        assert (
            main(
                [
                    str(inputs),
                    "-o",
                    str(out),
                    "--config",
                    str(config),
                    "--history",
                    str(tmp_path / "h"),
                ]
            )
            == 0
        )
    data = json.loads((out / "matrix.json").read_text())
    assert data["expectations"] and data["predictions"] and data["warnings"] and data["problems"]
    assert "trend" in data["cells"][0] and data["history"] == {"runs": 1}
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    golden = json.loads((GOLDEN / "expected" / "matrix.json").read_text())
    assert not list(validator.iter_errors(golden))
    # The schema is strict: an unknown key is an error (keep the schema in step with the code).
    data["cells"][0]["surprise"] = 1
    assert list(validator.iter_errors(data))

"""repro.report: reading JUnit from any producer, keying cells, rendering the matrix outputs.

Our own results are written with repro.junit.write_junit (the real writer) plus a run.json sidecar;
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

from repro import report as report_mod
from repro.errors import ConfigError
from repro.junit import write_junit
from repro.outcomes import CaseResult, Outcome
from repro.report import (
    GENERATOR,
    build_report,
    main,
    render_html,
    render_json,
    render_markdown,
    totals_line,
    write_outputs,
)

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


def counts(**kwargs: int) -> dict[str, int]:
    base = {o.value: 0 for o in Outcome}
    base.update(kwargs)
    base["tests"] = sum(v for k, v in base.items() if k != "tests")
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
        ("b.xml", '<testsuite name="s"><testcase classname="c" name="two"><failure message="x"/></testcase></testsuite>'),
    ):
        (tmp_path / "pytest-cpu").mkdir(exist_ok=True)
        (tmp_path / "pytest-cpu" / name).write_text(body)
    report = build_report([tmp_path], now=NOW)
    assert len(report.matrix["cells"]) == 1
    cell = report.matrix["cells"][0]
    assert (cell["variant"], cell["counts"]["passed"], cell["counts"]["failed"]) == ("pytest-cpu", 1, 1)
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
    monkeypatch.setattr(report_mod, "MAX_FILE_BYTES", 100)
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
        == "tests: 10, passed: 2, failed: 2, errors: 2, crashed: 1, hung: 1, skipped: 2"
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
    write_run(
        tmp_path / "results" / "run-1",
        sample_results(),
        host_key=GPU_HOST,
        variant_id="cu128-torch2.8",
    )
    (tmp_path / "results" / "run-1" / "logs" / "cudnn-1.log").unlink()  # one log went missing
    copy_fixture("pytest.xml", tmp_path / "results" / "pytest" / "junit.xml")
    copy_fixture("nunit.xml", tmp_path / "results" / "nunit" / "junit.xml")
    out = tmp_path / "site"
    written = write_outputs(build_report([tmp_path / "results"], now=NOW), out)
    assert sorted(p.name for p in out.iterdir()) == ["matrix.html", "matrix.json", "matrix.md"]
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
    assert data["schema_version"] == 1
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
        "tests: 6, passed: 1, failed: 1, errors: 1, crashed: 1, hung: 1, skipped: 1",
    ]


def test_main_missing_input_exits_2_with_one_line(tmp_path, capsys):
    assert main([str(tmp_path / "does-not-exist"), "-o", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        captured.err
        == f"repro report: error: {tmp_path / 'does-not-exist'}: no such file or directory\n"
    )
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------
# Golden files


def make_golden_inputs(root: Path) -> None:
    """The fixed inputs of the golden test (rewritten only with REPRO_UPDATE_GOLDEN=1)."""
    if root.exists():
        shutil.rmtree(root)
    write_run(root / "run-a", sample_results(), host_key=GPU_HOST, variant_id="cu128-torch2.8")
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
    write_run(
        root / "run-d",
        [CaseResult("shm", "shm[shm_size=64m]", Outcome.SKIPPED, 0.0, "docker not available")],
        host_key=CPU_HOST,
        variant_id="cpu-torch2.8",
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

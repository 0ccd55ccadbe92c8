"""The JUnit writer (atomic, parseable, properties) and terminal progress output."""

from __future__ import annotations

import io
import json
import os
from xml.etree import ElementTree

import pytest
from conftest import cases_by_name, run_cli
from junitparser import JUnitXml

from repro.junit import writer as junit
from repro.outcomes import CaseResult, Outcome
from repro.runner.progress import Progress
from repro.scenarios import Case


def result(case_id: str, outcome: Outcome, **kw) -> CaseResult:
    return CaseResult("planted", case_id, outcome, **kw)


def test_writer_maps_outcomes_to_junit_elements_and_keeps_crashed_and_hung_distinct(tmp_path):
    path = tmp_path / "junit.xml"
    junit.write_junit(
        path,
        [
            result("a", Outcome.PASSED, duration_s=1.25, metrics={"it_per_s": 12.5}),
            result(
                "b",
                Outcome.FAILED,
                message="check failed",
                signature="nan_detected",
                detail="log\x00tail",
            ),
            result("c", Outcome.CRASHED, message="killed by SIGSEGV", signature="segfault"),
            result("d", Outcome.HUNG, message="no verdict", signature="hang_timeout"),
            result("e", Outcome.SKIPPED, message="no GPU"),
        ],
        {"host.key": "CPU only · Debian", "variant.id": "cpu-torch2.13"},
        hostname="box",
    )
    xml = JUnitXml.fromfile(str(path))
    (suite,) = list(xml)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (5, 1, 2, 1)
    assert {p.name: p.value for p in suite.properties()}["host.key"] == "CPU only · Debian"
    cases = cases_by_name(path)
    assert cases["a"][1]["metric.it_per_s"] == "12.5" and cases["a"][0].time == 1.25
    assert (
        cases["b"][0].result[0].type == "nan_detected"
        and cases["b"][0].result[0].text == "log\ufffdtail"
    )
    assert [cases[k][1]["repro.outcome"] for k in "cde"] == ["crashed", "hung", "skipped"]
    assert (
        cases["c"][0].result[0].type == "segfault" and cases["e"][0].result[0].message == "no GPU"
    )


HOSTILE = {
    "ctrl-a": "case[\x01]",
    "escape": "case[\x1b[31mred]",
    "nul": "case[\x00]",
    "fffe": "case[\ufffe\uffff]",
    "surrogate": os.fsdecode(b"case[\xff]"),
}


def _parse_both(path):
    """The file parses with junitparser and with the standard library's ElementTree."""
    JUnitXml.fromfile(str(path))
    return ElementTree.parse(path).getroot()


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_strings_everywhere_still_give_a_parseable_file(tmp_path, text):
    path = tmp_path / "junit.xml"
    junit.write_junit(
        path,
        [
            result(
                text,
                Outcome.FAILED,
                message=f"message {text}",
                signature=f"sig{text}",
                detail=f"detail {text}",
                properties={f"prop{text}": text, "fsdecoded": os.fsdecode(b"\xff\xfe")},
                metrics={f"m{text}": 1.5},
                log_path=f"logs/{text}.log",
            ),
            CaseResult(f"scenario{text}", text, Outcome.SKIPPED, message=text),
        ],
        {f"host.{text}": text},
        hostname=f"box{text}",
    )
    root = _parse_both(path)
    raw = path.read_text(encoding="utf-8")
    assert "&#" not in raw  # never written as character references
    ids = [case.get("name") for case in root.iter("testcase")]
    assert len(ids) == 2 and ids[0] == junit.xml_safe(text) and "\ufffd" in ids[0]
    (failure,) = root.iter("failure")
    assert failure.get("type") == junit.xml_safe(f"sig{text}")
    names = {prop.get("name") for prop in root.iter("property")}
    assert junit.xml_safe(f"prop{text}") in names and junit.xml_safe(f"metric.m{text}") in names


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tab\tlf\ncr\r", "tab\tlf\ncr\r"),
        ("a\x00b\x1fc\x7f", "a\ufffdb\ufffdc\x7f"),
        ("\ud800\udfff", "\ufffd\ufffd"),
        ("\ufffe\uffff\ufffd", "\ufffd\ufffd\ufffd"),
        ("\U0001f600 \ud7ff \ue000", "\U0001f600 \ud7ff \ue000"),
    ],
)
def test_xml_safe_keeps_xml_chars_and_replaces_the_rest(text, expected):
    assert junit.xml_safe(text) == expected


def test_atomic_write_keeps_the_previous_file_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / "junit.xml"
    junit.write_junit(path, [result("a", Outcome.PASSED)], {})
    before = path.read_bytes()

    def broken_fsync(_fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(junit.os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        junit.write_junit(path, [result("a", Outcome.PASSED), result("b", Outcome.FAILED)], {})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["junit.xml"]  # no temporary file left


def test_progress_prints_plain_lines_when_not_a_tty():
    stream = io.StringIO()
    progress = Progress(stream, tty=False)
    case = Case("planted", "planted", (("kind", "hang"),), 5.0)
    progress.case_started(3, 12, case)
    progress.case_tick(31.0)
    progress.case_finished(
        3,
        12,
        result(
            case.case_id,
            Outcome.HUNG,
            duration_s=7.2,
            message="no verdict",
            signature="hang_timeout",
        ),
    )
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[ 3/12] still running    31 s  planted[kind=hang] (timeout 5 s)"
    assert lines[1] == "[ 3/12] HUNG        7.2 s  planted[kind=hang]"
    assert lines[2].strip() == "-> hang_timeout: no verdict"
    assert "\r" not in stream.getvalue() and "\033" not in stream.getvalue()


def test_progress_shows_the_findings_of_a_pass():
    """Issue 21, item 4: a pass with failure evidence says so in the console too."""
    stream = io.StringIO()
    progress = Progress(stream, tty=False)
    case = Case("planted", "planted", (("kind", "ok"),), 5.0)
    progress.case_started(1, 2, case)
    findings = {
        "repro.findings": "1",
        "repro.finding.1": "RuntimeError: context has already been set",
    }
    progress.case_finished(1, 2, result(case.case_id, Outcome.PASSED, properties=findings))
    progress.case_finished(2, 2, result("planted[kind=clean]", Outcome.PASSED))
    lines = stream.getvalue().splitlines()
    assert lines[-3].endswith("planted[kind=ok]")
    assert lines[-2].strip() == "-> passed · 1 finding: RuntimeError: context has already been set"
    assert lines[-1].endswith("planted[kind=clean]")  # a clean pass: one line


def test_progress_redraws_one_line_on_a_tty():
    stream = io.StringIO()
    progress = Progress(stream, tty=True)
    case = Case("planted", "planted", (("kind", "pass"),), 5.0)
    progress.case_started(1, 1, case)
    progress.case_tick(1.0)
    progress.case_finished(1, 1, result(case.case_id, Outcome.PASSED, duration_s=1.1))
    text = stream.getvalue()
    assert text.count("\r\033[K") >= 3 and "RUNNING" in text and "\033[32mPASSED" in text


def test_classify_cli_reads_a_users_log(project):
    log = project / "train.log"
    log.write_text(
        'step 12\nTraceback (most recent call last):\n  File "train.py", line 3\n'
        "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n"
        "torch.AcceleratorError: CUDA error: an illegal instruction was encountered\n"
    )
    done = run_cli("classify", str(log), "--json", cwd=project, timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["logs"][0]
    assert (found["signature"], found["line"]) == ("cudnn_execution_failed", 4)
    assert "O1" in found["source"]


def test_env_json_reports_torch_and_what_it_could_not_read(project):
    done = run_cli("env", "--json", cwd=project, timeout=120)
    assert done.returncode == 0, done.stderr
    fp = json.loads(done.stdout)
    assert fp["runtime"]["torch"].startswith("2.") and fp["runtime"]["accelerator_count"] == 0
    assert any(item["what"].startswith("nvml") for item in fp["unreadable"])

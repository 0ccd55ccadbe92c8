"""`repro report` on hostile inputs (issue 9, item 5): each bad input is that input's problem.

Every attack is generated here: symlink loops and symlinks out of the tree, a deeply nested
run.json, a metric of 1.7e308, FIFOs and devices where files are expected, a log path pointing
at /etc/shadow, a 10 MB host key. Each must end as an ``invalid`` input (or a warning, or a
one-line exit-2 error for --config/--history) while the rest merges; no link leaves the output
tree; outputs stay bounded. Each test is bounded in time by an alarm (or a subprocess timeout).
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import urllib.parse
from pathlib import Path

import pytest
from conftest import run_cli

from repro.cli.main import main as repro_main
from repro.junit.sidecar import write_run_info
from repro.junit.writer import write_junit
from repro.outcomes import CaseResult, Outcome
from repro.report import compare as compare_mod
from repro.report import html as html_mod
from repro.report.merge import build_report
from repro.report.model import MAX_KEY_CHARS, STATE_INVALID
from repro.report.outputs import write_outputs

HOST = "CPU only · Debian GNU/Linux 12 (bookworm)"
TIME_LIMIT_S = 10


@pytest.fixture(autouse=True)
def _deadline():
    """Fail (instead of hanging the suite) when a test blocks, e.g. on a FIFO."""

    def expired(signum, frame):
        raise TimeoutError(f"test blocked for more than {TIME_LIMIT_S} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TIME_LIMIT_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def write_run(
    run_dir: Path,
    *,
    host_key: str = HOST,
    variant_id: str = "cpu-torch2.8",
    results: list[CaseResult] | None = None,
    sidecar: bool = True,
) -> Path:
    """A run directory as the runner writes it: junit.xml and run.json."""
    run_dir.mkdir(parents=True, exist_ok=True)
    results = results or [
        CaseResult("cuda_basic", "cuda_basic[device=cpu]", Outcome.PASSED, 0.5),
        CaseResult("shm", "shm[size=64m]", Outcome.FAILED, 1.0, "Bus error", "shm_too_small"),
    ]
    write_junit(run_dir / "junit.xml", results, {"host.key": host_key, "variant.id": variant_id})
    if sidecar:
        info = {
            "schema": 1,
            "run_id": run_dir.name,
            "host_key": host_key,
            "variant": {"id": variant_id, "runtime": "cpu", "torch": "2.8.0", "source": "matrix"},
            "started": "2025-06-01T10:00:00Z",
            "finished": "2025-06-01T10:05:00Z",
            "cases_total": len(results),
            "cases_done": len(results),
        }
        write_run_info(run_dir, info)
    return run_dir / "junit.xml"


def inputs_by_path(report) -> dict[str, object]:
    return {record.path: record for record in report.inputs}


def hrefs(page: str) -> list[str]:
    return re.findall(r'href="([^"#][^"]*)"', page)


def test_symlink_loops_are_invalid_inputs_and_the_rest_merges(tmp_path):
    results = tmp_path / "results"
    write_run(results / "good")
    loop = results / "loop" / "junit.xml"
    loop.parent.mkdir()
    loop.symlink_to(loop)  # points at itself: ELOOP
    pair_a, pair_b = results / "a.xml", results / "b.xml"
    pair_a.symlink_to(pair_b)
    pair_b.symlink_to(pair_a)

    for given in ([results], [results / "good", loop]):  # found in a tree, or named directly
        report = build_report(given, predict=False)
        records = inputs_by_path(report)
        assert records[loop.as_posix()].state == STATE_INVALID
        assert "symbolic links" in records[loop.as_posix()].reason
        assert report.totals["tests"] == 2  # the good run merged
    report = build_report([results], predict=False)
    assert {inputs_by_path(report)[p.as_posix()].state for p in (pair_a, pair_b)} == {STATE_INVALID}


def test_symlinks_leaving_the_input_tree_are_not_followed(tmp_path):
    outside = write_run(tmp_path / "elsewhere" / "run", host_key="secret host")
    results = tmp_path / "results"
    write_run(results / "good")
    (results / "escape").mkdir()
    (results / "escape" / "junit.xml").symlink_to(outside)
    # A run.json that leads out of the tree is ignored (the XML keys the file instead).
    sneaky = write_run(results / "sneaky", host_key="tree host", sidecar=False)
    (sneaky.parent / "run.json").symlink_to(outside.parent / "run.json")
    # A symlinked directory out of the tree is not entered at all.
    (results / "linked-dir").symlink_to(outside.parent, target_is_directory=True)

    report = build_report([results], predict=False)
    escape = inputs_by_path(report)[(results / "escape" / "junit.xml").as_posix()]
    assert escape.state == STATE_INVALID
    assert escape.reason == "symlink leading outside the input tree; not followed"
    assert "secret host" not in {h["key"] for h in report.hosts}
    assert (
        sneaky.as_posix(),
        "run.json is a symlink leading outside the input tree; not followed",
    ) in (report.problems)
    assert not any("linked-dir" in record.path for record in report.inputs)
    assert report.totals["tests"] == 4  # good + sneaky


def test_deeply_nested_run_json_is_a_warning_and_the_xml_keys_the_file(tmp_path):
    results = tmp_path / "results"
    write_run(results / "good", variant_id="cu128-torch2.8")
    deep = write_run(results / "deep", sidecar=False)
    (deep.parent / "run.json").write_text("[" * 200_000 + "]" * 200_000)

    report = build_report([results], predict=False)
    assert (deep.as_posix(), "run.json is nested too deeply to read; ignored") in report.problems
    assert {c.variant for c in report.cells} == {"cu128-torch2.8", "cpu-torch2.8"}
    assert report.totals["tests"] == 4


def test_a_metric_of_1_7e308_is_recorded_null_and_nothing_overflows(tmp_path):
    results = tmp_path / "results"
    huge = [
        CaseResult(
            "dataloader",
            f"dataloader[device=cpu,start_method=fork,workers={n}]",
            Outcome.PASSED,
            1.0,
            metrics={"it_per_s": 1.7e308},
        )
        for n in (2, 4)
    ]
    normal = [
        CaseResult(
            "dataloader",
            "dataloader[device=cpu,start_method=spawn,workers=2]",
            Outcome.PASSED,
            1.0,
            metrics={"it_per_s": 40.0},
        )
    ]
    write_run(results / "huge", results=huge + normal)
    out = tmp_path / "out"
    report = build_report([results], predict=False)
    write_outputs(report, out)  # JSON with allow_nan=False, SVG axes, medians: no overflow

    cases = {c.case: c for c in report.cells[0].cases}
    assert cases["dataloader[device=cpu,start_method=fork,workers=2]"].metrics == {"it_per_s": None}
    assert cases["dataloader[device=cpu,start_method=spawn,workers=2]"].metrics == {
        "it_per_s": 40.0
    }
    assert any(
        "metric.it_per_s" in reason and "recorded null" in reason for _, reason in report.problems
    )
    data = json.loads((out / "matrix.json").read_text())
    assert data["totals"]["tests"] == 3
    assert "<svg" in (out / "matrix.html").read_text()

    # compare: a hand-made matrix.json with 1.7e308 in it does not overflow the means either.
    side = json.loads((out / "matrix.json").read_text())
    for case in side["cells"][0]["cases"]:
        case["metrics"] = {"it_per_s": 1.7e308}
    result = compare_mod.compare(side, side)
    assert result["throughput_drops"] == []
    assert all(math.isfinite(v) for v in (result["threshold"],))


def test_fifo_and_device_inputs_are_invalid_without_blocking(tmp_path):
    results = tmp_path / "results"
    write_run(results / "good")
    fifo = results / "fifo" / "junit.xml"
    fifo.parent.mkdir()
    os.mkfifo(fifo)  # nobody ever writes to it: opening it for reading would block

    report = build_report([results, fifo, Path("/dev/zero")], predict=False)
    records = inputs_by_path(report)
    assert records[fifo.as_posix()].state == STATE_INVALID
    assert records[fifo.as_posix()].reason == "not a regular file (FIFO)"
    assert records["/dev/zero"].reason == "not a regular file (character device)"
    assert report.totals["tests"] == 2


def test_fifo_run_json_and_history_entries_do_not_block(tmp_path):
    results = tmp_path / "results"
    run = write_run(results / "run", sidecar=False)
    os.mkfifo(run.parent / "run.json")
    history = tmp_path / "history"
    history.mkdir()
    os.mkfifo(history / "matrix-20250101T000000Z.json")
    out = tmp_path / "out"

    code = repro_main(["report", str(results), "-o", str(out), "--history", str(history)])
    assert code == 0
    data = json.loads((out / "matrix.json").read_text())
    assert {"path": run.as_posix(), "reason": "run.json: not a regular file (FIFO); ignored"} in (
        data["problems"]
    )
    assert data["totals"]["tests"] == 2


@pytest.mark.parametrize("option", ["--config", "--history"])
@pytest.mark.slow
def test_fifo_as_config_or_history_is_one_line_exit_2(tmp_path, option):
    results = tmp_path / "results"
    write_run(results / "run")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = run_cli("report", str(results), "-o", str(tmp_path / "out"), option, str(fifo),
                   cwd=tmp_path, timeout=TIME_LIMIT_S - 2)  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith("repro: error: ") and f"{option} {fifo}" in lines[0]
    assert not (tmp_path / "out").exists()  # nothing written on bad input


def test_no_link_in_matrix_html_leaves_the_output_tree(tmp_path):
    out = tmp_path / "site"
    results = out / "results"
    run_dir = results / "run"
    cases = [
        CaseResult(
            "shm", "shm[a]", Outcome.FAILED, 1.0, "x", "sig", log_path="../../../../etc/shadow"
        ),
        CaseResult("shm", "shm[b]", Outcome.FAILED, 1.0, "x", "sig", log_path="logs/escape.log"),
        CaseResult("shm", "shm[c]", Outcome.FAILED, 1.0, "x", "sig", log_path="logs/ok.log"),
        CaseResult("shm", "shm[d]", Outcome.FAILED, 1.0, "x", "sig", log_path="/etc/passwd"),
    ]
    write_run(run_dir, results=cases)
    (run_dir / "logs").mkdir()
    (run_dir / "logs" / "ok.log").write_text("fine\n")
    secret = tmp_path / "secret.log"
    secret.write_text("not for the report\n")
    (run_dir / "logs" / "escape.log").symlink_to(secret)  # a log symlinked out of the tree

    write_outputs(build_report([results], predict=False), out)
    page = (out / "matrix.html").read_text()
    links = hrefs(page)
    assert links == ["./results/run/logs/ok.log"]
    for link in links:
        target = (out / urllib.parse.unquote(link)).resolve()
        assert target.is_relative_to(out.resolve()) and target.is_file()
    assert "shadow" not in "".join(links) and "secret" not in page

    # Results outside the output directory: their logs are shown, never linked with ../
    elsewhere = tmp_path / "elsewhere-out"
    write_outputs(build_report([results], predict=False), elsewhere)
    page = (elsewhere / "matrix.html").read_text()
    assert hrefs(page) == []
    assert "(outside the output directory)" in page


def test_a_10_mb_host_key_is_capped_and_outputs_stay_small(tmp_path):
    results = tmp_path / "results"
    huge_key = "H" * (10 * 1024 * 1024)
    many = [
        CaseResult("shm", f"shm[n={n}]", Outcome.FAILED, 1.0, "m" * 5000, "s" * 5000)
        for n in range(20)
    ]
    write_run(results / "huge", host_key=huge_key, variant_id="V" * 1_000_000, results=many)
    write_run(results / "good")
    out = tmp_path / "out"
    report = build_report([results], predict=False)
    write_outputs(report, out)

    assert all(len(h["key"]) <= MAX_KEY_CHARS for h in report.hosts)
    assert all(len(v["id"]) <= MAX_KEY_CHARS for v in report.variants)
    assert all(len(c.signature or "") <= 200 and len(c.message) <= 500
               for cell in report.cells for c in cell.cases)  # fmt: skip
    assert any("host.key longer than 200 characters; cut" in r for _, r in report.problems)
    input_bytes = sum(p.stat().st_size for p in results.rglob("*") if p.is_file())
    for name in ("matrix.json", "matrix.md", "matrix.html"):
        assert (out / name).stat().st_size < input_bytes / 10, name
    assert report.totals["tests"] == 22


@pytest.mark.slow
def test_html_and_markdown_say_so_when_something_was_cut(tmp_path, monkeypatch):
    results = tmp_path / "results"
    cases = [
        CaseResult(
            "shm", f"shm[n={n}]", Outcome.FAILED, 1.0, "boom " * 90, "sig", detail="x" * 1500
        )
        for n in range(400)
    ]
    write_run(results / "run", results=cases)
    monkeypatch.setattr(html_mod, "HTML_MAX_CASE_BYTES", 100_000)
    out = tmp_path / "out"
    write_outputs(build_report([results], predict=False), out)
    page = (out / "matrix.html").read_text()
    assert "This page was cut to stay under its size limit" in page
    shown = page.count('<td class="case">')
    assert 0 < shown < 400
    assert f"{400 - shown} cases not shown" in page
    assert len(page) < 400_000

    from repro.report import markdown as markdown_mod

    monkeypatch.setattr(markdown_mod, "MD_MAX_BYTES", 20_000)
    write_outputs(build_report([results], predict=False), out)
    md = (out / "matrix.md").read_text()
    assert len(md.encode()) <= 20_000
    assert "omitted to stay under the step-summary size limit" in md

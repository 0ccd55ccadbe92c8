"""What a person sees (issue 12), without a browser: file modes, the totals line, the log
excerpt, colour contrast of every cell state, and matrix.md's legend, grouped skips, expected
reproductions and size. The real-browser checks are in tests/test_report_browser.py."""

from __future__ import annotations

import os
import re
import stat
from datetime import datetime, timezone
from pathlib import Path

import pytest

from repro import data as shipped_data
from repro.config import Expectation
from repro.junit.excerpt import log_excerpt
from repro.junit.sidecar import write_run_info
from repro.junit.writer import write_atomic, write_junit
from repro.outcomes import (
    EXPECT_EXPECTED,
    EXPECT_OTHER,
    EXPECT_XPASS,
    CaseResult,
    ExpectVerdict,
    Outcome,
    Totals,
    totals_line,
)
from repro.report.labels import EMOJI
from repro.report.markdown import render_markdown
from repro.report.merge import build_report
from repro.report.merge import totals_line as report_totals_line
from repro.report.outputs import write_outputs

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=timezone.utc)
GOLDEN = Path(__file__).parent / "fixtures" / "junit" / "golden"
NO_DEVICE = "no CUDA/ROCm device visible"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ------------------------------------------------------------------------------------------
# Files keep the user's umask


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_result_and_report_files_are_created_with_the_users_umask(tmp_path, umask, expected):
    old = os.umask(umask)
    try:
        run = tmp_path / "results" / "run-1"
        run.mkdir(parents=True)
        result = CaseResult("shm", "shm[x=1]", Outcome.PASSED, 1.0)
        write_junit(run / "junit.xml", [result], {"host.key": "h", "variant.id": "v"})
        write_run_info(run, {"schema": 1, "run_id": "run-1"})
        written = write_outputs(build_report([tmp_path / "results"], now=NOW), tmp_path / "out")
        write_atomic(tmp_path / "plain.bin", b"x")
    finally:
        os.umask(old)
    paths = [run / "junit.xml", run / "run.json", *written, tmp_path / "plain.bin"]
    assert {p.name: oct(_mode(p)) for p in paths} == {p.name: oct(expected) for p in paths}
    assert not list(run.glob(".*.tmp")), "no temporary file is left behind"


def test_write_atomic_replaces_and_keeps_the_old_file_on_failure(tmp_path):
    target = tmp_path / "junit.xml"
    write_atomic(target, b"old")
    with pytest.raises(TypeError):
        write_atomic(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["junit.xml"]


# ------------------------------------------------------------------------------------------
# The totals line


def _verdict(status: str, strict: bool = False) -> ExpectVerdict:
    return ExpectVerdict(rule=0, status=status, outcome="hung", reason="by design", strict=strict)


def test_totals_count_problems_apart_from_expected_reproductions_and_doctor_checks():
    totals = Totals()
    for outcome, n in [
        (Outcome.FAILED, 4),
        (Outcome.HUNG, 2),
        (Outcome.PASSED, 41),
        (Outcome.SKIPPED, 62),
    ]:
        for _ in range(n):
            totals.add("dataloader", outcome)
    for _ in range(8):
        totals.add("fork_safety", Outcome.HUNG, _verdict(EXPECT_EXPECTED))
    totals.add("ddp", Outcome.PASSED, _verdict(EXPECT_XPASS))
    for outcome in (Outcome.PASSED, Outcome.PASSED, Outcome.SKIPPED, Outcome.ERROR):
        totals.add("doctor", outcome)
    assert totals.cases == 4 + 2 + 41 + 62 + 8 + 1
    assert totals.problem_count == 7
    assert totals.line() == (
        "problems: 7 (2 hung, 4 failed, 1 failed doctor check) · expected reproductions: 8"
        " · passed: 41 · skipped: 62 · unexpectedly passing: 1 · doctor checks: 4"
    )
    assert totals.labels() == [
        ("hung", 2),
        ("failed", 4),
        ("unexpectedly passing", 1),
        ("expected", 8),
        ("passed", 41),
        ("skipped", 62),
        ("doctor checks", 4),
        ("failed doctor checks", 1),
    ]
    # A strict entry's pass (pytest's XPASS(strict)) is a problem; an "other outcome" red too.
    totals.add("amp", Outcome.PASSED, _verdict(EXPECT_XPASS, strict=True))
    totals.add("amp", Outcome.ERROR, _verdict(EXPECT_OTHER))
    assert totals.problem_count == 9
    assert totals.line().startswith(
        "problems: 9 (2 hung, 1 error, 4 failed, 1 unexpectedly passing (strict), "
        "1 failed doctor check) · "
    )
    counts = totals.to_json()
    assert (counts["tests"], counts["passed"], counts["hung"], counts["error"]) == (120, 43, 10, 1)
    assert (counts["problems"], counts["strict_passes"], counts["doctor_checks"]) == (9, 1, 4)


def test_a_clean_run_says_problems_0_first():
    results = [CaseResult("shm", f"shm[{i}]", Outcome.PASSED) for i in range(3)]
    results.append(CaseResult("ddp", "ddp[x]", Outcome.SKIPPED, message="needs 2 GPUs"))
    assert (
        totals_line(results) == "problems: 0 · expected reproductions: 0 · passed: 3 · skipped: 1"
    )


# ------------------------------------------------------------------------------------------
# Log excerpt

HUNG_LOG = (GOLDEN / "inputs" / "run-a" / "logs" / "dataloader-fork-4.log").read_text()


def test_hung_excerpt_starts_at_the_stack_dump_not_the_kernel_log_tail():
    excerpt = log_excerpt(HUNG_LOG, "fork_after_thread_lock", 1500)
    assert excerpt.startswith("…\n# repro watchdog: dumping stacks of 2 process(es)\n")
    assert "Thread 0x00007f1c2effd6c0 (most recent call first):" in excerpt
    assert "Current thread 0x" in excerpt
    assert len(excerpt) <= 1500 and excerpt.endswith("…")
    # The old behaviour (the log's tail) would have shown only kernel log lines.
    assert "Thread 0x" not in HUNG_LOG[-1500:]


@pytest.mark.parametrize(
    ("text", "starts"),
    [
        ("noise\nTraceback (most recent call last):\n  File x\nValueError: y\n", "Traceback"),
        ("a\nStack (most recent call first):\n  File z\n", "Stack (most recent"),
        ("a\n[rank1]: Traceback (most recent call last):\nboom\n", "[rank1]: Traceback"),
        ("b\nFatal Python error: Segmentation fault\n\nCurrent thread 0x1", "Fatal Python error"),
    ],
)
def test_excerpt_starts_at_the_first_header(text, starts):
    assert log_excerpt(text).split("\n", 2)[1].startswith(starts)


def test_excerpt_starts_at_the_signature_line_when_it_comes_first():
    text = (
        "x\n" * 200 + "RuntimeError: DataLoader worker (pid 42) is killed by signal: Bus error.\n"
    )
    text += "y\n" * 2000
    excerpt = log_excerpt(text, "dataloader_shm_exhausted", 300)
    assert excerpt.startswith("…\nRuntimeError: DataLoader worker (pid 42) is killed")


def test_excerpt_without_any_anchor_is_the_tail():
    text = "".join(f"line {i}\n" for i in range(1000))
    excerpt = log_excerpt(text, None, 100)
    assert excerpt.startswith("…") and excerpt.endswith("line 999") and len(excerpt) == 100


def test_golden_matrix_json_holds_the_stack_dump_excerpt():
    report = build_report([GOLDEN / "inputs"], now=NOW, predict=False)
    [hung] = [c for cell in report.cells for c in cell.cases if c.outcome is Outcome.HUNG]
    assert "# repro watchdog: dumping stacks" in hung.excerpt


# ------------------------------------------------------------------------------------------
# Colour contrast (WCAG 2.x, https://www.w3.org/TR/WCAG21/#dfn-contrast-ratio)


def _luminance(hex_colour: str) -> float:
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two ``#rrggbb`` colours."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def state_colours() -> dict[str, tuple[str, str]]:
    """state -> (background, text) from the template's ``:root`` variables."""
    css = shipped_data.HTML_TEMPLATE.read_text(encoding="utf-8")
    root = re.search(r":root\s*\{(.*?)\}", css, re.S).group(1)
    values = dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-fA-F]{6})", root))
    return {
        name: (value, values[f"{name}-fg"])
        for name, value in values.items()
        if not name.endswith("-fg") and f"{name}-fg" in values
    }


def test_contrast_helper_matches_known_values():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


def test_every_cell_state_colour_meets_wcag_aa():
    colours = state_colours()
    states = {s.replace(" ", "-") for s in EMOJI}
    assert states <= set(colours), f"states without a colour pair: {states - set(colours)}"
    ratios = {state: round(contrast(bg, fg), 2) for state, (bg, fg) in colours.items()}
    assert all(r >= 4.5 for r in ratios.values()), ratios
    # Each state's rule uses its own pair (no hard-coded colour overrides it).
    css = shipped_data.HTML_TEMPLATE.read_text(encoding="utf-8")
    assert "color: #fff" not in css and "!important" not in css


# ------------------------------------------------------------------------------------------
# matrix.md


def _junit_text(host: str, variant: str, cases: list[tuple[str, str, str, str]]) -> str:
    """A small JUnit file in the writer's layout, built as text (fast for 1000 files)."""
    rows = []
    for case, outcome, signature, message in cases:
        props = f'<property name="repro.outcome" value="{outcome}"/>'
        if signature:
            props += f'<property name="repro.signature" value="{signature}"/>'
        body = ""
        if outcome == "skipped":
            body = f'<skipped message="{message}"/>'
        elif outcome == "failed":
            body = f'<failure type="{signature}" message="{message}">log</failure>'
        elif outcome != "passed":
            body = f'<error type="{signature}" message="{message}">log</error>'
        scenario = case.split("[", 1)[0]
        rows.append(
            f'<testcase classname="repro.{scenario}" name="{case}" time="1.0">'
            f"<properties>{props}</properties>{body}</testcase>"
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="all"><properties>'
        f'<property name="host.key" value="{host}"/><property name="variant.id" value="{variant}"/>'
        "</properties>" + "".join(rows) + "</testsuite></testsuites>"
    )


def _cpu_host_cases(variant: int) -> list[tuple[str, str, str, str]]:
    cases = [(f"cuda_basic[device=cuda,n={i}]", "skipped", "", NO_DEVICE) for i in range(50)]
    cases += [(f"shm[size={i}]", "skipped", "", "needs docker") for i in range(2)]
    cases += [(f"model[device=cpu,n={i}]", "passed", "", "") for i in range(41)]
    cases += [
        (f"fork_safety[mode={i}]", "hung", "hang.fork_after_thread_lock", "watchdog fired")
        for i in range(8)
    ]
    if variant % 7 == 3:
        cases.append(("amp[dtype=bf16]", "failed", "nan_detected", "loss is nan at step 3"))
    return cases


def test_cpu_host_summary_groups_skips_and_lists_expected_reproductions(tmp_path):
    path = tmp_path / "run" / "junit.xml"
    path.parent.mkdir()
    path.write_text(_junit_text("CPU only · Debian 12", "cpu-torch2.8", _cpu_host_cases(0)))
    expect = Expectation(0, "fork while a thread holds a lock", "hung", scenario="fork_safety")
    report = build_report([tmp_path], now=NOW, predict=False, expectations=[expect])
    md = render_markdown(report)
    assert md.count(f"52 skipped: 50 {NO_DEVICE}, 2 needs docker") == 1
    assert "| ⬜ skipped |" not in md and NO_DEVICE not in md.replace(f"50 {NO_DEVICE}", "")
    assert md.count("| 🟦 expected reproduction | fork\\_safety\\[mode=") == 8
    assert "**problems: 0 · expected reproductions: 8 · passed: 41 · skipped: 52**" in md
    assert "1 input file, 1 cell ·" in md
    assert "_Legend:_ 🟩 passed" in md and "⬜ skipped" in md and "⚪ no tests" in md
    assert report_totals_line(report) in md


def test_no_tests_and_skipped_have_different_emoji():
    assert EMOJI["skipped"] != EMOJI["no tests"]
    assert len(set(EMOJI.values())) == len(EMOJI)


@pytest.mark.slow
def test_markdown_for_50_hosts_by_20_variants_fits_a_step_summary(tmp_path):
    for h in range(50):
        host = f"NVIDIA H100 80GB HBM3 · driver 5{h:02d}.10 · Ubuntu 24.04 · rack {h}"
        for v in range(20):
            path = tmp_path / f"h{h}" / f"v{v}" / "junit.xml"
            path.parent.mkdir(parents=True)
            path.write_text(_junit_text(host, f"cu128-torch2.{v}", _cpu_host_cases(v + h)))
    expect = Expectation(0, "fork while a thread holds a lock", "hung", scenario="fork_safety")
    report = build_report([tmp_path], now=NOW, predict=False, expectations=[expect])
    assert len(report.cells) == 1000
    md = render_markdown(report)
    size = len(md.encode("utf-8"))
    assert size < 1024 * 1024, size
    assert "| **NVIDIA H100 80GB HBM3 · driver 549.10" in md  # the table is there
    assert f"50 {NO_DEVICE}" in md and "| ⬜ skipped |" not in md

"""Issue 12 item 4: what `repro run` prints on a terminal."""

from __future__ import annotations

import fcntl
import io
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from urllib.parse import unquote

import pytest
from conftest import cli_env, write_matrix

from repro.outcomes import EXPECT_EXPECTED, EXPECT_XPASS, CaseResult, ExpectVerdict, Outcome
from repro.runner.progress import Progress, truncate_middle, use_colour
from repro.scenarios import Case

COLUMNS = 80
#: Colour codes (CSI) and OSC 8 hyperlink brackets: neither takes a column.
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\x1b\]8;;[^\x1b]*\x1b\\")
#: Case ids longer than the terminal (issue 12: 60 of 106 real ids were).
LONG = "x" * 70


def run_in_pty(args: list[str], cwd: Path, columns: int, env: dict[str, str]) -> str:
    """Run ``python -m repro ARGS`` with stdin/stdout/stderr on a pseudo-terminal ``columns``
    wide; returns everything it wrote (raw, with carriage returns and escapes)."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    attrs = termios.tcgetattr(follower)
    attrs[1] &= ~termios.ONLCR  # keep the child's "\n" as written (no "\r\n" translation)
    termios.tcsetattr(follower, termios.TCSANOW, attrs)
    child_env = {**cli_env(), **env}
    child_env.pop("COLUMNS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "repro", *args],
        cwd=cwd,
        env=child_env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    chunks = []
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(leader)
        proc.kill() if proc.poll() is None else None
        proc.wait(timeout=30)
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_repro_run_on_an_80_column_terminal_never_wraps_and_ends_each_case_once(project):
    write_matrix(
        project,
        f"""\
        planted:
          module: planted
          timeout_s: 6
          params: {{kind: ["pass~{LONG}", "fail~{LONG}", "slow_pass~{LONG}"]}}
        """,
    )
    out = run_in_pty(["run", "--no-doctor"], project, COLUMNS, {"NO_COLOR": "1"})
    assert "\x1b[3" not in out  # NO_COLOR: no colour codes
    screen_lines = []
    for line in out.split("\n"):
        # Every drawn state (between carriage returns) fits; the last one is what stays.
        for drawn in line.split("\r"):
            visible = ANSI.sub("", drawn)
            assert len(visible) <= COLUMNS, visible
        screen_lines.append(ANSI.sub("", line.split("\r")[-1]))
    verdicts = [line for line in screen_lines if re.match(r"\[\d/3\] (PASSED|FAILED) ", line)]
    assert len(verdicts) == 3, screen_lines
    for verdict in verdicts:
        assert "planted[kind=" in verdict and "…" in verdict  # long ids cut in the middle
    # The slow case redrew its line in place instead of printing RUNNING lines.
    assert not any(line.startswith("[3/3] RUNNING") for line in screen_lines)
    assert out.count("RUNNING") >= 2
    # A closing list of what did not pass, with the log path; the totals in the report's words.
    start = next(i for i, line in enumerate(screen_lines) if "not passed" in line)
    closing = screen_lines[start:]
    assert any(line.startswith("FAILED planted[kind=fail") for line in closing)
    assert any(
        line.strip().startswith("log: ") and line.strip().endswith(".log") for line in closing
    )
    assert "problems: 1 (1 failed)" in out and "passed: 2" in out
    # The cut log path is a hyperlink (OSC 8) to the whole, existing log.
    uris = re.findall(r"\x1b\]8;;file://([^\x1b]+)\x1b\\", out)
    assert uris and all(Path(unquote(uri)).is_file() for uri in uris if uri)


def _case(case_id: str) -> Case:
    return Case(scenario="planted", module="planted", params=(("kind", case_id),), timeout_s=5.0)


def test_truncate_middle_keeps_start_and_end():
    assert truncate_middle("abcdef", 10) == "abcdef"
    assert truncate_middle("abcdefghij", 5) == "ab…ij"
    assert len(truncate_middle("a" * 300, 40)) == 40
    assert truncate_middle("abc", 1) == "…"


@pytest.mark.parametrize(
    ("tty", "env", "expected"),
    [
        (True, {}, True),
        (False, {}, False),
        (True, {"NO_COLOR": "1"}, False),
        (False, {"FORCE_COLOR": "1"}, True),
        (True, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False),
        (True, {"NO_COLOR": ""}, True),  # no-color.org: only a non-empty value counts
    ],
)
def test_colour_follows_tty_no_color_and_force_color(tty, env, expected):
    assert use_colour(tty, env) is expected


def test_closing_list_names_every_non_passing_case_with_signature_and_log(tmp_path):
    stream = io.StringIO()
    progress = Progress(stream, tty=False, colour=False, width=80)
    results = [
        CaseResult("planted", "planted[kind=pass]", Outcome.PASSED),
        CaseResult(
            "planted",
            "planted[kind=hang]",
            Outcome.HUNG,
            message="no heartbeat",
            signature="hang_timeout",
            log_path="logs/planted-kind=hang.log",
        ),
        CaseResult("planted", "planted[kind=skip]", Outcome.SKIPPED, message="no GPU"),
        CaseResult(
            "planted",
            "planted[kind=flaky]",
            Outcome.PASSED,
            log_path="logs/planted-kind=flaky-2.log",
            properties={
                "repro.flaky": "true",
                "repro.first_signature": "planted_sig",
                "repro.first_message": "AssertionError: first",
                "repro.first_log": "logs/planted-kind=flaky.log",
            },
        ),
    ]
    progress.run_finished(results, tmp_path / "run")
    lines = stream.getvalue().splitlines()
    assert lines[0] == "SKIPPED 1 case: no GPU"  # skips: one line per reason
    assert lines[1] == f"    every skipped case: {tmp_path / 'run' / 'logs/skipped.log'}"
    assert "not passed" in lines[2]
    assert lines[3] == "HUNG planted[kind=hang] - hang_timeout: no heartbeat"
    assert lines[4] == f"    log: {tmp_path / 'run' / 'logs/planted-kind=hang.log'}"
    assert lines[5].startswith("FLAKY planted[kind=flaky] - planted_sig: passed on a rerun")
    assert lines[6].endswith("logs/planted-kind=flaky.log")  # the failing attempt's log
    assert len(lines) == 7  # passes are not listed


def _verdict(status: str, strict: bool = False) -> ExpectVerdict:
    return ExpectVerdict(
        rule=0,
        status=status,
        outcome="hung",
        reason="fork while a thread holds a lock",
        label="repro.scenarios.fork_safety.EXPECT[0]",
        strict=strict,
    )


def test_expected_reproductions_show_as_expected_and_skips_are_grouped_by_reason(tmp_path):
    """Issue 29: an EXPECT'd red reads EXPECTED in the progress line and after the problems in
    the closing list; 61 skipped GPU cases are one line, not 61."""
    stream = io.StringIO()
    progress = Progress(stream, tty=False, colour=False, width=100)
    expected = CaseResult(
        "planted", "planted[kind=hang]", Outcome.HUNG, 4.9, "no heartbeat", "hang_timeout"
    )
    expected.expect = _verdict(EXPECT_EXPECTED)
    strict_pass = CaseResult("planted", "planted[kind=pass]", Outcome.PASSED, 0.1)
    strict_pass.expect = _verdict(EXPECT_XPASS, strict=True)
    red = CaseResult("planted", "planted[kind=fail]", Outcome.FAILED, 0.2, "boom", "planted_sig")
    skips = [
        CaseResult("planted", f"planted[gpu={i}]", Outcome.SKIPPED, message="no CUDA/ROCm device")
        for i in range(61)
    ] + [CaseResult("planted", "planted[ranks=2]", Outcome.SKIPPED, message="needs 2 GPUs")]
    results = [expected, strict_pass, red, *skips]
    for index, result in enumerate(results, start=1):
        progress.case_started(index, len(results), _case(result.case_id))
        progress.case_finished(index, len(results), result)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[ 1/65] EXPECTED    4.9 s  planted[kind=hang]")
    assert lines[1].strip() == "-> expected reproduction; hang_timeout: no heartbeat"
    assert lines[2].startswith("[ 2/65] XPASS ")
    assert "strict: a problem" in lines[3]
    assert lines[4].startswith("[ 3/65] FAILED ")
    assert len(lines) == 6  # no line for a skipped case
    stream.truncate(0), stream.seek(0)
    progress.run_finished(results, tmp_path / "run")
    lines = stream.getvalue().splitlines()
    assert lines[:2] == ["SKIPPED 61 cases: no CUDA/ROCm device", "SKIPPED 1 case: needs 2 GPUs"]
    listed = [line.split(" ", 1)[0] for line in lines[4:] if not line.startswith(" ")]
    assert listed == ["FAILED", "XPASS", "EXPECTED"]  # problems (strict pass too) first


def test_a_tty_clears_the_line_of_a_skipped_case():
    stream = io.StringIO()
    progress = Progress(stream, tty=True, colour=False, width=60)
    case = _case("skip")
    progress.case_started(1, 1, case)
    progress.case_finished(1, 1, CaseResult("planted", case.case_id, Outcome.SKIPPED, message="x"))
    assert "\n" not in stream.getvalue() and stream.getvalue().endswith("\r\033[K")


def test_tty_lines_fit_the_width_and_the_case_line_is_redrawn(tmp_path):
    stream = io.StringIO()
    progress = Progress(stream, tty=True, colour=True, width=40)
    case = _case("y" * 100)
    progress.case_started(1, 1, case)
    progress.case_tick(0.6)
    progress.case_tick(1.2)
    progress.case_finished(
        1, 1, CaseResult("planted", case.case_id, Outcome.FAILED, 1.3, "boom", "sig")
    )
    text = stream.getvalue()
    assert text.count("\n") == 1  # one final line for the case
    for drawn in text.replace("\n", "\r").split("\r"):
        assert len(ANSI.sub("", drawn)) < 40
    assert "\x1b[31m" in text  # FAILED in red when colour is on

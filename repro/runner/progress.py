"""Terminal progress for long runs: which case, elapsed seconds, verdict, and a closing list.

On a TTY each case is one line redrawn in place (carriage return) with its elapsed time and
then its verdict; every line is cut to the terminal's width, case ids with an ellipsis in the
middle (the scenario and the last parameters are what tell cases apart), so nothing wraps.
Elsewhere (CI logs, pipes) every finished case is one plain line with its full id, the red
ones followed by their signature and message, and a case running for a long time prints a
"still running" line every ``NON_TTY_NOTICE_S`` seconds so a CI log never looks dead.

A red case that a scenario's ``EXPECT`` or matrix.yaml's ``expect:`` predicts shows as
``EXPECTED`` (``XPASS`` when such a case passed), as in the totals line and the report. Skipped
cases get no line each: :meth:`Progress.run_finished` prints one line per skip reason with the
count (the full list is in ``junit.xml`` and the run's ``logs/skipped.log``), then lists every
problem, then every expected reproduction, with signature and log path, as pytest's short test
summary does.

Colour: on a TTY unless ``NO_COLOR`` is set to anything non-empty (https://no-color.org);
``FORCE_COLOR`` (non-empty) forces it elsewhere. ``NO_COLOR`` wins, as in pytest.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from repro import properties as property_names
from repro.outcomes import (
    DOCTOR_SCENARIO,
    EXPECT_EXPECTED,
    EXPECT_XPASS,
    SEVERITY_RANK,
    CaseResult,
    Outcome,
)
from repro.runner.run_all import (
    SKIPPED_LOG,
    Reporter,
    is_flaky,
)
from repro.scenarios import Case

NON_TTY_NOTICE_S = 30.0
#: Seconds between redraws of the running case's line on a TTY.
REDRAW_S = 0.5
ELLIPSIS = "…"
#: SGR colour codes per outcome (and ``flaky``).
_COLOURS = {
    Outcome.PASSED.value: "32",
    Outcome.FAILED.value: "31",
    Outcome.ERROR.value: "33",
    Outcome.CRASHED.value: "35",
    Outcome.HUNG.value: "35",
    Outcome.SKIPPED.value: "90",
    "flaky": "36",
    "expected": "34",
    "xpass": "33",
}


def truncate_middle(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` characters with ``…`` in the middle, keeping its start
    and its end (``planted[kind=…,workers=2]``); unchanged when it fits."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = width // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def use_colour(tty: bool, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to colour: ``NO_COLOR`` (non-empty) never, else ``FORCE_COLOR`` (non-empty)
    always, else only on a TTY."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    return tty


def terminal_width(stream: TextIO) -> int:
    """Columns of the terminal behind ``stream`` (``COLUMNS`` first, as
    ``shutil.get_terminal_size``), 80 when there is none. A ``COLUMNS`` that is not a whole
    number from 1 to 99999 is ignored (5000 digits would make ``int()`` raise)."""
    columns = os.environ.get("COLUMNS", "")
    if re.fullmatch(r"[0-9]{1,5}", columns) and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().columns


def fit_to_terminal(text: str, stream: TextIO) -> str:
    """``text`` wrapped at spaces to the width of the terminal behind ``stream`` (continuation
    lines indented), unchanged when ``stream`` is not a terminal. A single word longer than the
    width (a path) is kept whole: a cut path cannot be copied."""
    if not stream.isatty():
        return text
    width = max(20, terminal_width(stream)) - 1
    return "\n".join(
        textwrap.wrap(
            text,
            width,
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        or [""]
    )


def _label(result: CaseResult) -> str:
    """``flaky``, ``expected`` (a predicted reproduction), ``xpass`` (a predicted one passed) or
    the outcome."""
    if is_flaky(result):
        return "flaky"
    status = result.expect.status if result.expect is not None else None
    if status == EXPECT_EXPECTED:
        return "expected"
    if status == EXPECT_XPASS:
        return "xpass"
    return result.outcome.value


def _is_problem(result: CaseResult) -> bool:
    """What makes the run red (``repro.outcomes.Totals.problem_count``)."""
    verdict = result.expect
    if verdict is not None and verdict.strict_pass:
        return True
    return result.outcome.is_problem and (verdict is None or verdict.status != EXPECT_EXPECTED)


def skip_groups(results: Sequence[CaseResult]) -> list[tuple[str, int]]:
    """``(reason, count)`` of the skipped cases, most frequent first (then by reason); doctor
    checks that do not apply (n/a) are not cases (the totals line counts them apart)."""
    counts: dict[str, int] = {}
    for result in results:
        if result.outcome is Outcome.SKIPPED and result.scenario != DOCTOR_SCENARIO:
            reason = result.message or "no reason given"
            counts[reason] = counts.get(reason, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


class Progress(Reporter):
    """Prints progress to ``stream`` (stderr by default). ``tty``, ``colour`` and ``width``
    (columns) override detection."""

    def __init__(
        self,
        stream: TextIO | None = None,
        tty: bool | None = None,
        colour: bool | None = None,
        width: int | None = None,
    ):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.colour = use_colour(self.tty) if colour is None else colour
        self._width = width
        self._case: Case | None = None
        self._prefix = ""
        self._state = "RUNNING"
        self._last_drawn = -1.0
        self._next_notice = NON_TTY_NOTICE_S

    @property
    def width(self) -> int:
        """Columns available; read at every draw so a resized terminal is followed."""
        return max(20, self._width or terminal_width(self.stream))

    def _paint(self, text: str, label: str) -> str:
        code = _COLOURS.get(label)
        return f"\033[{code}m{text}\033[0m" if self.colour and code else text

    def _line(self, verdict: str, label: str, seconds: float, case_id: str, tail: str = "") -> str:
        """``[ 3/12] FAILED     1.2 s  case-id  tail`` cut to the width (case id in the middle,
        then the tail); colour codes do not count as columns."""
        head = f"{self._prefix} {verdict:<8} {seconds:6.1f} s  "
        room = self.width - len(head) - 1  # never the last column: some terminals wrap there
        case_text = truncate_middle(case_id, max(room, 1))
        rest = room - len(case_text)
        tail_text = ""
        if tail and rest > 4:
            tail_text = "  " + truncate_middle(tail, rest - 2)
        painted = self._paint(f"{verdict:<8}", label)
        return f"{self._prefix} {painted} {seconds:6.1f} s  {case_text}{tail_text}"

    def case_started(self, index: int, total: int, case: Case) -> None:
        width = len(str(total))
        self._case = case
        self._prefix = f"[{index:>{width}}/{total}]"
        self._state = "RUNNING"
        self._last_drawn = -1.0
        self._next_notice = NON_TTY_NOTICE_S
        if self.tty:
            self._draw(0.0)

    def case_tick(self, elapsed_s: float) -> None:
        if self._case is None:
            return
        if self.tty:
            if elapsed_s - self._last_drawn >= REDRAW_S:
                self._draw(elapsed_s)
        elif elapsed_s >= self._next_notice:
            print(
                f"{self._prefix} still running {elapsed_s:5.0f} s  {self._case.case_id} (timeout {self._case.timeout_s:g} s)",
                file=self.stream,
                flush=True,
            )
            self._next_notice += NON_TTY_NOTICE_S

    def case_rerun(self, attempt: int, reruns: int, first: CaseResult) -> None:
        self._state = f"RERUN {attempt}/{reruns}"
        self._last_drawn = -1.0
        self._next_notice = NON_TTY_NOTICE_S
        if self.tty:
            self._draw(0.0)
        else:
            print(
                f"{self._prefix} {first.outcome.value.upper():<8} {first.duration_s:6.1f} s  "
                f"{first.case_id}: rerun {attempt}/{reruns}",
                file=self.stream,
                flush=True,
            )

    def round_started(self, round_no: int, rounds: int, cases: int) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
        print(
            f"round {round_no}/{rounds}: "
            f"{'1 case that records' if cases == 1 else f'{cases} cases that record'} a rate, "
            "each in a new process",
            file=self.stream,
            flush=True,
        )

    def _draw(self, elapsed_s: float) -> None:
        assert self._case is not None
        self._last_drawn = elapsed_s
        line = self._line(self._state, "", elapsed_s, self._case.case_id)
        self.stream.write(f"\r\033[K{line}")
        self.stream.flush()

    def case_finished(self, index: int, total: int, result: CaseResult) -> None:
        label = _label(result)
        verdict = label.upper()
        findings = result.properties.get(property_names.FINDINGS, "")
        if result.outcome is Outcome.SKIPPED:  # grouped by reason in run_finished
            if self.tty:
                self.stream.write("\r\033[K")
                self.stream.flush()
            self._case = None
            return
        if self.tty:
            tail = result.signature if result.outcome.is_problem else ""
            if label == "xpass" and result.expect is not None:
                tail = f"expected {result.expect.outcome}" + (
                    " (strict)" if result.expect.strict else ""
                )
            if findings and not tail:  # exit 0 with failure evidence (issue 21, item 4)
                tail = f"{findings} finding{'' if findings == '1' else 's'}"
            line = self._line(verdict, label, result.duration_s, result.case_id, tail)
            self.stream.write(f"\r\033[K{line}\n")
            self.stream.flush()
        else:
            line = f"{self._prefix} {self._paint(f'{verdict:<8}', label)} {result.duration_s:6.1f} s  {result.case_id}"
            pad = " " * len(self._prefix)
            if label == "xpass" and result.expect is not None:
                strict = ", strict: a problem" if result.expect.strict else ""
                line += (
                    f"\n{pad}   -> passed, but {result.expect.label} expects "
                    f"{result.expect.outcome}{strict}: {result.expect.reason[:200]}"
                )
            elif result.outcome is not Outcome.PASSED or is_flaky(result):
                detail = f"{result.signature}: " if result.signature else ""
                if is_flaky(result):
                    first = result.properties.get(property_names.FIRST_SIGNATURE) or "failure"
                    detail = f"passed on a rerun; first {first}: "
                elif label == "expected":
                    detail = "expected reproduction; " + detail
                message = (
                    result.properties.get(property_names.FIRST_MESSAGE, "")
                    if is_flaky(result)
                    else result.message
                )
                line += f"\n{pad}   -> {detail}{message[:200]}"
            elif findings:  # "passed · 1 finding: RuntimeError: context has already been set"
                first = result.properties.get(property_names.finding(1), "")
                noun = "finding" if findings == "1" else "findings"
                line += f"\n{pad}   -> passed · {findings} {noun}: {first[:200]}"
            print(line, file=self.stream, flush=True)
        self._case = None

    def _log_line(self, path: Path) -> str:
        """``    log: PATH``. On a TTY a path wider than the terminal is cut in the middle and
        made a hyperlink (OSC 8) to the whole path, so the line never wraps and the log is still
        one click away; elsewhere the path is whole."""
        head = "    log: "
        shown = _shown_path(path)
        room = self.width - 1 - len(head)
        if not self.tty or len(shown) <= room:
            return head + shown
        return head + _hyperlink(path, truncate_middle(shown, room))

    def run_finished(self, results: Sequence[CaseResult], run_dir: Path) -> None:
        """After the run: one line per skip reason with its count (the full list: junit.xml
        and ``logs/skipped.log``), then the closing list: every problem (worst first) and every
        flaky case, then every expected reproduction and unexpected pass, each with its
        signature and message, then its log path (see :meth:`_log_line`)."""
        out = []
        groups = skip_groups(results)
        for reason, count in groups:
            text = f"{count} case{'' if count == 1 else 's'}: {reason}"
            if self.tty:
                text = truncate_middle(text, self.width - 1 - len("SKIPPED "))
            out.append(self._paint("SKIPPED", Outcome.SKIPPED.value) + " " + text)
        if groups:
            out.append(f"    every skipped case: {_shown_path(run_dir / SKIPPED_LOG)}")
        listed = [r for r in results if r.outcome.is_problem or is_flaky(r) or _label(r) == "xpass"]
        if listed:
            # Problems first (worst first), then flaky ones, then what the expectations predicted.
            listed.sort(key=lambda r: (not _is_problem(r), is_flaky(r), SEVERITY_RANK[r.outcome]))
            title = " not passed "
            rule = "=" * max(0, (min(self.width, 100) - 1 - len(title)) // 2)
            out.append(f"{rule}{title}{rule}")
        for result in listed:
            label = _label(result)
            signature, message, log = result.signature, result.message, result.log_path
            if is_flaky(result):  # what went wrong the first time is what needs looking at
                signature = result.properties.get(property_names.FIRST_SIGNATURE) or ""
                message = "passed on a rerun; first: " + result.properties.get(
                    property_names.FIRST_MESSAGE, ""
                )
                log = result.properties.get(property_names.FIRST_LOG) or log
            elif label == "xpass" and result.expect is not None:
                strict = " (strict: a problem)" if result.expect.strict else ""
                signature = f"passed{strict}"
                message = f"{result.expect.label} expects {result.expect.outcome}"
            head = f"{label.upper()} "
            text = f"{result.case_id} - {signature}: {message}".strip()
            if self.tty:
                text = truncate_middle(text, self.width - 1 - len(head))
            out.append(self._paint(label.upper(), label) + " " + text)
            if log:
                out.append(self._log_line(run_dir / log))
        if out:
            print("\n".join(out), file=self.stream, flush=True)


def _hyperlink(target: Path, text: str) -> str:
    """``text`` as an OSC 8 terminal hyperlink to ``target`` (a terminal without OSC 8 support
    shows just ``text``)."""
    try:
        uri = target.resolve().as_uri()
    except (OSError, ValueError):
        return text
    return f"\033]8;;{uri}\033\\{text}\033]8;;\033\\"


def _shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it (shorter to copy)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (OSError, ValueError):
        return str(path)

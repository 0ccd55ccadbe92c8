"""Terminal progress for long runs: which case, elapsed seconds, verdict.

On a TTY the current case's line is redrawn in place with its elapsed time; elsewhere (CI
logs, pipes) every finished case is one plain line, and a case running for a long time prints
a "still running" line every ``NON_TTY_NOTICE_S`` seconds so a CI log never looks dead.
"""

from __future__ import annotations

import sys
from typing import TextIO

from repro.outcomes import CaseResult, Outcome
from repro.runner.run_all import Reporter
from repro.scenarios import Case

NON_TTY_NOTICE_S = 30.0
_COLOURS = {
    Outcome.PASSED: "32",
    Outcome.FAILED: "31",
    Outcome.ERROR: "33",
    Outcome.CRASHED: "35",
    Outcome.HUNG: "35",
    Outcome.SKIPPED: "90",
}


class Progress(Reporter):
    """Prints progress to ``stream`` (stderr by default); ``tty`` overrides detection."""

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self._case: Case | None = None
        self._prefix = ""
        self._last_drawn = -1.0
        self._next_notice = NON_TTY_NOTICE_S

    def case_started(self, index: int, total: int, case: Case) -> None:
        width = len(str(total))
        self._case = case
        self._prefix = f"[{index:>{width}}/{total}]"
        self._last_drawn = -1.0
        self._next_notice = NON_TTY_NOTICE_S
        if self.tty:
            self._draw(0.0)

    def case_tick(self, elapsed_s: float) -> None:
        if self._case is None:
            return
        if self.tty:
            if elapsed_s - self._last_drawn >= 0.5:
                self._draw(elapsed_s)
        elif elapsed_s >= self._next_notice:
            print(
                f"{self._prefix} still running {elapsed_s:5.0f} s  {self._case.case_id} (timeout {self._case.timeout_s:g} s)",
                file=self.stream,
                flush=True,
            )
            self._next_notice += NON_TTY_NOTICE_S

    def _draw(self, elapsed_s: float) -> None:
        assert self._case is not None
        self._last_drawn = elapsed_s
        self.stream.write(
            f"\r\033[K{self._prefix} {'RUNNING':<8} {elapsed_s:6.1f} s  {self._case.case_id}"
        )
        self.stream.flush()

    def case_finished(self, index: int, total: int, result: CaseResult) -> None:
        verdict = result.outcome.value.upper()
        if self.tty:
            verdict = f"\033[{_COLOURS[result.outcome]}m{verdict:<8}\033[0m"
            self.stream.write("\r\033[K")
        else:
            verdict = f"{verdict:<8}"
        line = f"{self._prefix} {verdict} {result.duration_s:6.1f} s  {result.case_id}"
        if result.outcome is not Outcome.PASSED:
            detail = f"{result.signature}: " if result.signature else ""
            line += f"\n{' ' * len(self._prefix)}   -> {detail}{result.message[:200]}"
        print(line, file=self.stream, flush=True)
        self._case = None

"""The outcome model shared by the runner, the JUnit writer and the report.

Words follow ../shared/DESIGN.md: a *case* is one parametrization of a scenario; its *outcome*
is one of :class:`Outcome`; every non-pass carries a *signature* (``repro.signatures.engine``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field


class Outcome(str, enum.Enum):
    """How a case ended.

    - ``passed``: the scenario's checks held.
    - ``failed``: a check failed, i.e. the bug reproduced (AssertionError or ``ctx.fail``).
    - ``error``: an exception outside the checks, or the case process died without a verdict.
    - ``crashed``: the case process was killed by a signal it did not ask for (SIGSEGV, SIGABRT...).
    - ``hung``: the watchdog fired; stacks were dumped, then the process tree was killed.
    - ``skipped``: a requirement is absent; always carries a reason.
    """

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    CRASHED = "crashed"
    HUNG = "hung"
    SKIPPED = "skipped"

    @property
    def is_problem(self) -> bool:
        """True for outcomes that make a run red (everything but passed and skipped)."""
        return self not in (Outcome.PASSED, Outcome.SKIPPED)


#: Order used for totals lines and table columns.
OUTCOME_ORDER = (
    Outcome.PASSED,
    Outcome.FAILED,
    Outcome.ERROR,
    Outcome.CRASHED,
    Outcome.HUNG,
    Outcome.SKIPPED,
)


@dataclass
class CaseResult:
    """The verdict on one case, as written to JUnit.

    Attributes:
        scenario: scenario name, e.g. ``"dataloader"``.
        case_id: canonical case id, e.g. ``"dataloader[device=cpu,start_method=fork,workers=2]"``.
        outcome: see :class:`Outcome`.
        duration_s: wall time of the case process in seconds.
        message: one line: the skip reason, or the first meaningful line of the failure.
        signature: signature name for non-passes (``"unknown"`` when no rule matched).
        detail: trimmed log text for the JUnit failure/error body.
        metrics: measured numbers, written as ``metric.<name>`` testcase properties
            (units in the name: ``first_batch_s``, ``it_per_s``, ``bytes``).
        properties: other testcase properties (``repro.returncode``, ``repro.signal``...).
        log_path: path of the case log relative to the run directory.
    """

    scenario: str
    case_id: str
    outcome: Outcome
    duration_s: float = 0.0
    message: str = ""
    signature: str = ""
    detail: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    log_path: str = ""


#: Severity, worst first: the order of a cell's cases and count summaries in the report, and
#: which outcome a duplicated case id keeps in ``repro compare``. A hang hides more than a crash,
#: a crash more than an error, an error more than a failed check.
SEVERITY_ORDER = (
    Outcome.HUNG,
    Outcome.CRASHED,
    Outcome.ERROR,
    Outcome.FAILED,
    Outcome.PASSED,
    Outcome.SKIPPED,
)
#: Outcome (or its string value; ``Outcome`` is a ``str`` enum) -> rank in SEVERITY_ORDER.
SEVERITY_RANK = {outcome: rank for rank, outcome in enumerate(SEVERITY_ORDER)}
#: The problem outcomes' values, worst first (what makes a run red, see ``Outcome.is_problem``).
PROBLEM_VALUES = tuple(o.value for o in SEVERITY_ORDER if o.is_problem)


#: The testsuite (scenario) name of ``repro doctor`` findings (``repro.host.doctor.SCENARIO``):
#: host checks, counted apart from the scenario cases in every totals line.
DOCTOR_SCENARIO = "doctor"
#: How a problem outcome is named in the totals line's breakdown.
_PROBLEM_WORDS = {
    Outcome.HUNG: "hung",
    Outcome.CRASHED: "crashed",
    Outcome.ERROR: "error",
    Outcome.FAILED: "failed",
}


@dataclass
class Totals:
    """What a run or a report adds up to, each case counted exactly once.

    Scenario cases: ``problems`` (problem outcomes no ``expect:`` entry predicted, per outcome),
    ``expected`` (reproductions a ``matrix.yaml`` ``expect:`` entry predicts),
    ``unexpectedly_passing`` (predicted to fail, passed), ``passed``, ``skipped``. Host checks of
    the ``doctor`` testsuite are counted only in ``doctor_checks`` and ``doctor_problems``
    (failed checks: they make the run red, so they also show in the problems' breakdown).
    """

    problems: dict[Outcome, int] = field(default_factory=dict)
    expected: int = 0
    unexpectedly_passing: int = 0
    passed: int = 0
    skipped: int = 0
    doctor_checks: int = 0
    doctor_problems: int = 0
    flaky: int = 0

    def add(
        self,
        scenario: str,
        outcome: Outcome,
        expect_status: str | None = None,
        flaky: bool = False,
    ) -> None:
        """Count one case. ``expect_status`` is the report's ``expect:`` verdict
        (``"expected"``, ``"unexpectedly passing"``, or None/anything else for none).
        ``flaky``: red first, passed on a rerun (``repro.flaky=true``); a flaky pass is counted
        under ``flaky``, not ``passed``."""
        outcome = Outcome(outcome)
        if scenario == DOCTOR_SCENARIO:
            self.doctor_checks += 1
            self.doctor_problems += outcome.is_problem
        elif expect_status == "expected":
            self.expected += 1
        elif expect_status == "unexpectedly passing":
            self.unexpectedly_passing += 1
        elif outcome is Outcome.PASSED and flaky:
            self.flaky += 1
        elif outcome is Outcome.PASSED:
            self.passed += 1
        elif outcome is Outcome.SKIPPED:
            self.skipped += 1
        else:
            self.problems[outcome] = self.problems.get(outcome, 0) + 1

    @property
    def cases(self) -> int:
        """Scenario cases counted (doctor checks not included)."""
        return (
            sum(self.problems.values())
            + self.expected
            + self.unexpectedly_passing
            + self.passed
            + self.flaky
            + self.skipped
        )

    @property
    def problem_count(self) -> int:
        """Everything that makes the run red: unexpected problem outcomes and failed doctor checks."""
        return sum(self.problems.values()) + self.doctor_problems

    def line(self) -> str:
        """The one totals line of ``repro run`` and ``repro report``, e.g.
        ``problems: 6 (2 hung, 4 failed) · expected reproductions: 8 · passed: 41 · skipped: 62``,
        then ``· flaky: N`` (passed only on a rerun) and ``· unexpectedly passing: N`` when
        N > 0, and ``· doctor checks: N`` when any ran.
        Problems come first and are never added up with expected reproductions (issue 12)."""
        breakdown = [
            f"{self.problems[o]} {_PROBLEM_WORDS[o]}"
            + ("s" if o is Outcome.ERROR and self.problems[o] != 1 else "")
            for o in SEVERITY_ORDER
            if self.problems.get(o)
        ]
        if self.doctor_problems:
            breakdown.append(
                f"{self.doctor_problems} failed doctor check{'' if self.doctor_problems == 1 else 's'}"
            )
        problems = f"problems: {self.problem_count}"
        if breakdown:
            problems += f" ({', '.join(breakdown)})"
        parts = [
            problems,
            f"expected reproductions: {self.expected}",
            f"passed: {self.passed}",
            f"skipped: {self.skipped}",
        ]
        if self.flaky:
            parts.append(f"flaky: {self.flaky}")
        if self.unexpectedly_passing:
            parts.append(f"unexpectedly passing: {self.unexpectedly_passing}")
        if self.doctor_checks:
            parts.append(f"doctor checks: {self.doctor_checks}")
        return " · ".join(parts)


def totals_line(results: Iterable[CaseResult]) -> str:
    """The totals line (:meth:`Totals.line`) of a run's results, for ``repro run``'s last line."""
    totals = Totals()
    for result in results:
        flaky = result.properties.get("repro.flaky") == "true"
        totals.add(result.scenario, result.outcome, flaky=flaky)
    return totals.line()

"""The outcome model shared by the runner, the JUnit writer and the report.

Words follow ../shared/DESIGN.md: a *case* is one parametrization of a scenario; its *outcome*
is one of :class:`Outcome`; every non-pass carries a *signature* (``repro.signatures.engine``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from repro import properties as property_names


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


#: How a case compares with the ``expect:`` entry (or scenario ``EXPECT``) that covers it
#: (:class:`ExpectVerdict`, made by ``repro.config.expect``, the one matcher).
EXPECT_EXPECTED = "expected"
EXPECT_XPASS = "unexpectedly passing"
EXPECT_OTHER = "other outcome"
EXPECT_SKIPPED = "skipped"


@dataclass(frozen=True)
class ExpectVerdict:
    """A case against the first ``expect:`` entry that covers it.

    ``status``: ``expected`` (the predicted failure happened), ``unexpectedly passing`` (it
    passed), ``other outcome`` (red some other way: still a problem) or ``skipped``. ``rule``
    is the entry's index in ``Matrix.expectations``, ``label`` how messages name it
    (``repro.scenarios.ddp.EXPECT[1] (case 'ddp[...]')``); ``outcome``, ``reason``, ``link``
    and ``strict`` are the entry's. ``strict`` (as pytest's ``xfail(strict=True)``): an
    unexpected pass is a problem, not a note.
    """

    rule: int
    status: str
    outcome: str
    reason: str
    label: str = ""
    link: str | None = None
    strict: bool = False

    @property
    def strict_pass(self) -> bool:
        """A strict entry's case passed: counted as a problem (:meth:`Totals.add`)."""
        return self.strict and self.status == EXPECT_XPASS


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
        expect: the verdict of the ``expect:`` entry that covers the case (``repro run``
            applies them as each case ends), or None.
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
    expect: ExpectVerdict | None = None


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
    """What a run, a report or one matrix cell adds up to, each case counted exactly once: the
    one counting rule of the terminal, matrix.md, matrix.html and matrix.json (issue 29).

    Scenario cases: ``problems`` (problem outcomes no ``expect:`` entry predicted, per outcome),
    ``strict_passes`` (a ``strict`` entry's case that passed: a problem too), ``expected``
    (reproductions an ``expect:`` entry or a scenario's ``EXPECT`` predicts),
    ``unexpectedly_passing`` (predicted to fail, passed, entry not strict), ``flaky`` (passed
    only on a rerun), ``passed``, ``skipped``. Host checks of the ``doctor`` testsuite are
    counted only in ``doctor_checks`` and ``doctor_problems`` (failed checks: they make the run
    red, so they also show in the problems' breakdown).
    """

    problems: dict[Outcome, int] = field(default_factory=dict)
    expected: int = 0
    unexpectedly_passing: int = 0
    strict_passes: int = 0
    passed: int = 0
    skipped: int = 0
    doctor_checks: int = 0
    doctor_problems: int = 0
    flaky: int = 0
    #: Scenario cases per outcome as they ended, before any ``expect:`` verdict.
    outcomes: dict[Outcome, int] = field(default_factory=dict)

    def add(
        self,
        scenario: str,
        outcome: Outcome,
        verdict: ExpectVerdict | None = None,
        flaky: bool = False,
    ) -> None:
        """Count one case. ``verdict``: its ``expect:`` verdict (``repro.config.expect``), or
        None. ``flaky``: red first, passed on a rerun (``repro.flaky=true``); a flaky pass is
        counted under ``flaky``, not ``passed``."""
        outcome = Outcome(outcome)
        status = verdict.status if verdict is not None else None
        if scenario == DOCTOR_SCENARIO:
            self.doctor_checks += 1
            self.doctor_problems += outcome.is_problem
            return
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if status == EXPECT_EXPECTED:
            self.expected += 1
        elif verdict is not None and verdict.strict_pass:
            self.strict_passes += 1
        elif status == EXPECT_XPASS:
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
            + self.strict_passes
            + self.expected
            + self.unexpectedly_passing
            + self.passed
            + self.flaky
            + self.skipped
        )

    @property
    def problem_count(self) -> int:
        """Everything that makes the run red (exit status 1): unexpected problem outcomes, strict
        entries' unexpected passes and failed doctor checks."""
        return sum(self.problems.values()) + self.strict_passes + self.doctor_problems

    def _breakdown(self) -> list[str]:
        out = [
            f"{self.problems[o]} {_PROBLEM_WORDS[o]}"
            + ("s" if o is Outcome.ERROR and self.problems[o] != 1 else "")
            for o in SEVERITY_ORDER
            if self.problems.get(o)
        ]
        if self.strict_passes:
            out.append(f"{self.strict_passes} unexpectedly passing (strict)")
        if self.doctor_problems:
            out.append(
                f"{self.doctor_problems} failed doctor check{'' if self.doctor_problems == 1 else 's'}"
            )
        return out

    def line(self) -> str:
        """The one totals line of ``repro run`` and ``repro report``, e.g.
        ``problems: 6 (2 hung, 4 failed) · expected reproductions: 8 · passed: 41 · skipped: 62``,
        then ``· flaky: N`` (passed only on a rerun) and ``· unexpectedly passing: N`` when
        N > 0, and ``· doctor checks: N`` when any ran.
        Problems come first and are never added up with expected reproductions (issue 12)."""
        breakdown = self._breakdown()
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

    def labels(self) -> list[tuple[str, int]]:
        """``(label, n)`` of a matrix cell, worst first, zeros left out, in the words of
        :meth:`line`: problem outcomes (``failed``...), ``unexpectedly passing (strict)``,
        ``unexpectedly passing``, ``expected``, ``flaky``, ``passed``, ``skipped``, then
        ``doctor checks`` and ``failed doctor checks`` (a cell reads ``5 expected · 50 passed
        · 6 skipped · 7 doctor checks``, as the totals line does)."""
        out = [(o.value, self.problems.get(o, 0)) for o in SEVERITY_ORDER if o.is_problem]
        out += [
            ("unexpectedly passing (strict)", self.strict_passes),
            ("unexpectedly passing", self.unexpectedly_passing),
            ("expected", self.expected),
            ("flaky", self.flaky),
            ("passed", self.passed),
            ("skipped", self.skipped),
            ("doctor checks", self.doctor_checks),
            ("failed doctor checks", self.doctor_problems),
        ]
        return [(label, n) for label, n in out if n]

    def to_json(self) -> dict[str, int]:
        """matrix.json's ``totals`` and each cell's ``counts`` (schema ``$defs/counts``):
        scenario cases per outcome as they ended (``tests`` = scenario cases), the verdicts (``problems``:
        what makes the run red, ``expected``, ``unexpectedly_passing``, ``strict_passes``,
        ``flaky``) and the doctor checks counted apart."""
        return {
            **{o.value: self.outcomes.get(o, 0) for o in OUTCOME_ORDER},
            "tests": self.cases,
            "problems": self.problem_count,
            "expected": self.expected,
            "unexpectedly_passing": self.unexpectedly_passing,
            "strict_passes": self.strict_passes,
            "flaky": self.flaky,
            "doctor_checks": self.doctor_checks,
            "doctor_problems": self.doctor_problems,
        }


def totals_of(results: Iterable[CaseResult]) -> Totals:
    """A run's results counted (:class:`Totals`), verdicts of ``result.expect`` applied."""
    totals = Totals()
    for result in results:
        flaky = result.properties.get(property_names.FLAKY) == "true"
        totals.add(result.scenario, result.outcome, result.expect, flaky=flaky)
    return totals


def totals_line(results: Iterable[CaseResult]) -> str:
    """The totals line (:meth:`Totals.line`) of a run's results, for ``repro run``'s last line."""
    return totals_of(results).line()

"""The outcome model shared by the runner, the JUnit writer and the report.

Words follow ../shared/DESIGN.md: a *case* is one parametrization of a scenario; its *outcome*
is one of :class:`Outcome`; every non-pass carries a *signature* (``repro.signatures.engine``).
"""

from __future__ import annotations

import enum
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

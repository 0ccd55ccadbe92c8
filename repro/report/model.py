"""The report's data model: one record per input file, cells keyed by (host, variant), the report.

Words follow ../shared/DESIGN.md. A :class:`CaseRecord` is one ``<testcase>`` after
classification (``repro.junit.reader``); an :class:`InputRecord` is one input file with its key
and state; a :class:`Cell` gathers the inputs of one (host key, variant id); a :class:`Report` is
the merged whole (``repro.report.merge.build_report``). Cell states besides the outcomes:
``invalid``, ``no tests``, ``missing`` (junit-notes.md "Cell states the matrix needs").

Every text that comes from an input is capped here (:data:`MAX_KEY_CHARS`, ...), so one hostile
file cannot make the outputs grow without bound. This module never reads files.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro import __version__
from repro import properties as property_names
from repro.outcomes import (
    EXPECT_EXPECTED,
    EXPECT_XPASS,
    SEVERITY_RANK,
    ExpectVerdict,
    Outcome,
    Totals,
)

if TYPE_CHECKING:
    from repro import compat
    from repro.config import Expectation
    from repro.report.start_methods import Summary

#: matrix.json's schema_version: 2 counts doctor checks apart and adds the verdicts to ``totals``
#: and each cell's ``counts`` (issue 29); the cells and cases read back (history, compare) are
#: the same in 1 and 2, so both are read.
SCHEMA_VERSION = 2
READABLE_SCHEMA_VERSIONS = (1, 2)
GENERATOR = f"repro-matrix {__version__}"

#: Caps on text taken from an input (characters). A longer value is cut with "…" and the input
#: gets a warning: a 10 MB host key must not be repeated into every cell of matrix.html.
MAX_KEY_CHARS = 200
MAX_NAME_CHARS = 500
MAX_MESSAGE_CHARS = 500
MAX_PROPERTY_CHARS = 1000
#: Tail of a failure/error body kept as the case's log excerpt (characters).
MAX_EXCERPT_CHARS = 1500
#: Newer inputs named per superseded input (the count of cases is always exact).
MAX_SUPERSEDED_BY = 20

UNKNOWN_HOST = "unknown host"

STATE_OK = "ok"
STATE_INVALID = "invalid"
STATE_SUPERSEDED = "superseded"
STATE_NO_TESTS = "no tests"
STATE_MISSING = "missing"
#: Effective cell states from matrix.yaml ``expect:`` entries.
STATE_EXPECTED = "expected"
STATE_XPASS = "unexpectedly passing"
#: A case red first and passed on a rerun (``repro run --rerun-failures``; ``repro.flaky=true``),
#: and a cell whose worst case is one.
STATE_FLAKY = "flaky"

RED_STATES = frozenset({"hung", "crashed", "error", "failed"})
GREEN_STATES = frozenset({"passed", STATE_EXPECTED, STATE_XPASS, STATE_FLAKY})

#: Cell state precedence, worst first. An unreadable file outranks a pass: a cell with a passing
#: file and a truncated one must not look green.
CELL_STATE_ORDER = (
    Outcome.HUNG.value,
    Outcome.CRASHED.value,
    Outcome.ERROR.value,
    Outcome.FAILED.value,
    STATE_INVALID,
    Outcome.PASSED.value,
    Outcome.SKIPPED.value,
    STATE_NO_TESTS,
)
#: Effective cell state precedence (worst first): expected failures sit below invalid inputs and
#: unexpected passes, above plain passes.
EFFECTIVE_STATE_ORDER = (
    *CELL_STATE_ORDER[:5],
    STATE_XPASS,
    STATE_EXPECTED,
    STATE_FLAKY,
    *CELL_STATE_ORDER[5:],
)

#: Most findings a case record keeps (``repro.runner`` writes at most this many).
MAX_FINDINGS = 5


def finding_fields(props: dict[str, str]) -> dict[str, Any]:
    """``CaseRecord`` keyword arguments from a testcase's ``repro.finding.N`` properties:
    ``findings`` in N's order (at most :data:`MAX_FINDINGS`, each cut to 500 characters)."""
    numbered = []
    for key, value in props.items():
        number = property_names.finding_number(key) or ""
        if number.isdigit() and len(number) < 4 and value.strip():
            numbered.append((int(number), value.strip()[:500]))
    return {"findings": tuple(value for _, value in sorted(numbered)[:MAX_FINDINGS])}


def rerun_fields(props: dict[str, str]) -> dict[str, Any]:
    """``CaseRecord`` keyword arguments from a testcase's rerun properties: ``flaky`` (True:
    passed on a rerun, False: red every time, None: never rerun), ``reruns`` (count) and
    ``first_signature``. Values that are not ``true``/``false`` or a whole number read as none."""
    flaky = {"true": True, "false": False}.get(props.get(property_names.FLAKY, "").strip().lower())
    reruns = props.get(property_names.RERUNS, "").strip()
    first = props.get(property_names.FIRST_SIGNATURE) or None
    return {
        "flaky": flaky,
        "reruns": int(reruns) if reruns.isdigit() and len(reruns) < 6 else 0,
        "first_signature": first[:MAX_KEY_CHARS] if first else None,
    }


# --------------------------------------------------------------------------------------------
# Records


@dataclass(slots=True)
class CaseRecord:
    """One ``<testcase>`` after classification (``__slots__``: a report holds up to
    ``repro.junit.reader.MAX_TESTCASES_TOTAL`` of them, so each one's size bounds its memory)."""

    scenario: str
    case: str
    outcome: Outcome
    signature: str | None
    message: str
    time_s: float | None
    metrics: dict[str, float | None]
    log: str | None
    file: str
    #: Tail of the failure/error body (the trimmed log our writer puts there), "" for none.
    excerpt: str = ""
    #: The covering ``expect:`` entry's verdict (``repro.config.expect``; shared, immutable), or None.
    expect: ExpectVerdict | None = None
    #: ``repro.flaky``: True passed on a rerun, False red on every rerun, None never rerun.
    flaky: bool | None = None
    reruns: int = 0
    #: The first attempt's signature of a flaky case.
    first_signature: str | None = None
    #: Failure evidence in a passed case's output (``repro.finding.N``; issue 21, item 4).
    findings: tuple[str, ...] = ()

    @property
    def expect_status(self) -> str | None:
        return self.expect.status if self.expect else None

    @property
    def is_flaky(self) -> bool:
        """Passed, but only on a rerun (a ``repro.flaky=true`` pass)."""
        return bool(self.flaky) and self.outcome is Outcome.PASSED

    @property
    def display_state(self) -> str:
        """The case's state as shown: its outcome, or ``expected``, ``unexpectedly passing``
        (``expect:`` entries) or ``flaky``."""
        if self.expect_status == EXPECT_EXPECTED:
            return STATE_EXPECTED
        if self.expect_status == EXPECT_XPASS:
            return STATE_XPASS
        if self.is_flaky:
            return STATE_FLAKY
        return self.outcome.value

    def to_json(self) -> dict[str, Any]:
        out = {
            "scenario": self.scenario,
            "case": self.case,
            "outcome": self.outcome.value,
            "signature": self.signature,
            "message": self.message,
            "excerpt": self.excerpt,
            "time_s": self.time_s,
            "metrics": dict(self.metrics),
            "log": self.log,
            "file": self.file,
        }
        if self.findings:
            out["findings"] = list(self.findings)
        if self.flaky is not None:
            out["flaky"] = self.flaky
            out["reruns"] = self.reruns
            if self.first_signature:
                out["first_signature"] = self.first_signature
        if self.expect is not None:  # the entry itself is in the top-level "expectations"
            out["expect"] = {"rule": self.expect.rule, "status": self.expect.status}
        return out


@dataclass
class InputRecord:
    """One input file: its key, its state and what it contained."""

    path: str
    state: str
    reason: str | None
    host: str
    variant: str
    cases: list[CaseRecord] = field(default_factory=list)
    host_properties: dict[str, str] = field(default_factory=dict)
    variant_properties: dict[str, str] = field(default_factory=dict)
    #: ``started`` from our run.json sidecar; None for foreign files.
    run_started: str | None = None
    #: Why our run did not finish (run.json: interrupted, no finish time, fewer cases done than
    #: planned), or None. A partial run adds its cases and never hides older ones.
    partial: str | None = None
    #: Scenario cases a newer run of the same (host, variant) also has (``repro.report.merge``):
    #: they are not in the matrix; ``superseded_by`` names those newer inputs (at most
    #: :data:`MAX_SUPERSEDED_BY`). Doctor checks, which every run repeats, are not counted.
    superseded_cases: int = 0
    superseded_by: list[str] = field(default_factory=list)
    #: ``run`` (a runner's junit.xml), ``stray`` (another XML file inside a run directory: an
    #: input of its own, never that run's results) or ``foreign`` (``repro.junit.reader``).
    origin: str = "foreign"
    #: Why this run's junit.xml is not the file its runner wrote (its SHA-256 differs from the
    #: one run.json recorded), or None (issue 32).
    changed: str | None = None

    @property
    def tests(self) -> int:
        return len(self.cases)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "state": self.state,
            "reason": self.reason,
            "host": self.host,
            "variant": self.variant,
            "tests": self.tests,
            "partial": self.partial,
            "superseded_cases": self.superseded_cases,
            "superseded_by": list(self.superseded_by),
            "origin": self.origin,
            "changed_after_run": self.changed,
        }


def column_id(variant: str, lane: str, lanes: set[str] | frozenset[str]) -> str:
    """The matrix column of ``variant``'s results from ``lane``, among all ``lanes`` the
    variant has results from: the variant id while it has one lane (or for results that name
    none), else ``ID (LANE)``: ``cpu-torch2.13 (venv)``."""
    return f"{variant} ({lane})" if lane and len(set(lanes)) > 1 else variant


@dataclass
class Cell:
    """All inputs with the same (host, variant, lane) key: one row, one column.

    ``lane`` is the inputs' ``variant.lane`` (host, venv, container; "" where none is written).
    ``column``: the matrix column, the variant id, or ``ID (LANE)`` when the variant has results
    from more than one lane (:func:`column_id`): the host and the venv lane of one variant are
    two columns, neither hides the other (issue 31; issue 33's two-lane Slurm array)."""

    host: str
    variant: str
    lane: str = ""
    column: str = ""
    files: list[str] = field(default_factory=list)
    cases: list[CaseRecord] = field(default_factory=list)
    invalid_files: int = 0
    #: Inputs of this cell whose junit.xml changed after its run (``InputRecord.changed``).
    changed_files: list[str] = field(default_factory=list)

    def totals(self) -> Totals:
        """The cell's cases counted by the one rule of every totals line (``repro.outcomes.
        Totals``): verdicts applied, doctor checks apart."""
        return count_cases(self.cases)

    @property
    def counts(self) -> dict[str, int]:
        """matrix.json's ``counts`` of the cell (:meth:`repro.outcomes.Totals.to_json`)."""
        return self.totals().to_json()

    @property
    def state(self) -> str:
        present = {case.outcome.value for case in self.cases}
        if self.invalid_files:
            present.add(STATE_INVALID)
        for state in CELL_STATE_ORDER:
            if state in present:
                return state
        return STATE_NO_TESTS

    @property
    def effective_state(self) -> str:
        """The state after ``expect:`` entries: failures they predict become ``expected``,
        predicted failures that passed ``unexpectedly passing``. Equals ``state`` without them."""
        present = {case.display_state for case in self.cases}
        if self.invalid_files:
            present.add(STATE_INVALID)
        for state in EFFECTIVE_STATE_ORDER:
            if state in present:
                return state
        return STATE_NO_TESTS

    def display_counts(self) -> list[tuple[str, int]]:
        """(label, n) worst first, in the totals line's words (:meth:`repro.outcomes.Totals.
        labels`): unexpected problems by outcome, unexpected passes, expected reproductions,
        flaky passes, passes, skips, then the doctor checks, counted apart."""
        return self.totals().labels()

    def __post_init__(self) -> None:
        self.column = self.column or self.variant

    def sorted_cases(self) -> list[CaseRecord]:
        return sorted(
            self.cases, key=lambda c: (SEVERITY_RANK[c.outcome], c.scenario, c.case, c.file)
        )

    def to_json(self) -> dict[str, Any]:
        out = {
            "host": self.host,
            "variant": self.variant,
            "state": self.state,
            "effective_state": self.effective_state,
            "counts": self.counts,
            "files": list(self.files),
            "cases": [
                c.to_json() for c in sorted(self.cases, key=lambda c: (c.scenario, c.case, c.file))
            ],
        }
        if self.changed_files:
            out["changed_after_run"] = list(self.changed_files)
        if self.column != self.variant:  # a variant split by lane: say which column
            out["lane"] = self.lane
            out["column"] = self.column
        return out


@dataclass
class Report:
    """The merged result of ``build_report``.

    ``matrix`` is the json-able dict written to ``matrix.json``; ``totals`` is its ``totals``, every
    case counted by the one rule (``repro.outcomes.Totals.to_json``); ``problems`` lists ``(path, reason)`` for every input that was
    invalid or needs a warning. ``log_files`` maps a case's ``log`` string to the existing file.
    """

    generated_at: str
    inputs: list[InputRecord]
    cells: list[Cell]
    hosts: list[dict[str, Any]]
    variants: list[dict[str, Any]]
    problems: list[tuple[str, str]]
    totals: dict[str, int]
    matrix: dict[str, Any]
    log_files: dict[str, Path] = field(default_factory=dict, repr=False)
    #: Coverage and expectation warnings about the matrix file (one line each).
    warnings: list[str] = field(default_factory=list)
    #: (host, variant) -> prediction vs observation, for every pair (missing cells included).
    predictions: dict[tuple[str, str], PredictionView] = field(default_factory=dict, repr=False)
    #: The ``expect:`` entries applied, and how many cases each matched.
    expectations: tuple[Expectation, ...] = ()
    expectation_hits: dict[int, int] = field(default_factory=dict)
    #: (host, variant) -> change since the previous report (``--history``).
    trends: dict[tuple[str, str], Trend] = field(default_factory=dict, repr=False)
    history_runs: int | None = None
    #: The start-method summaries (``repro.report.start_methods``), per host, variant and
    #: device with dataloader results.
    start_methods: list[Summary] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._index = {(cell.host, cell.column): cell for cell in self.cells}

    def cell(self, host: str, column: str) -> Cell | None:
        """The cell for (host, column) (a column is a variant id, or ``ID (LANE)`` for a
        variant split by lane: :attr:`Cell.column`), or None where that combination has no
        input (missing)."""
        return self._index.get((host, column))


def count_cases(cases: list[CaseRecord]) -> Totals:
    """``cases`` counted once each by the one rule (``repro.outcomes.Totals``): problems apart
    from expected reproductions, doctor checks apart from scenario cases."""
    totals = Totals()
    for case in cases:
        totals.add(case.scenario, case.outcome, case.expect, flaky=case.is_flaky)
    return totals


@dataclass(frozen=True)
class PredictionView:
    """A cell's prediction (``repro.compat.predictions``) next to the observation.

    ``observed`` is ``pass``/``fail`` from the cases the prediction is about (the accelerator
    cases of a GPU variant when the case ids say so, else every case; expected failures left
    out), or None where nothing comparable ran (missing cell, only skips). ``disagreement``
    "predicted to pass but failed" needs a failure with an environment signature (driver, arch,
    runtime, device, container, WSL2): a failure of the user's own code never raises it (issue 21,
    item 7).
    """

    prediction: compat.Prediction
    observed: str | None
    disagreement: str | None

    def to_json(self, host: str, variant: str) -> dict[str, Any]:
        return {
            "host": host,
            "variant": variant,
            "predicted": self.prediction.outcome,
            "unverified": self.prediction.unverified,
            "summary": self.prediction.summary(),
            "observed": self.observed,
            "disagreement": self.disagreement,
            "reasons": [reason.to_json() for reason in self.prediction.reasons],
        }


@dataclass(frozen=True)
class Trend:
    """A cell against earlier reports: its previous effective state, the change, the red streak."""

    previous: str | None
    change: str | None
    red_runs: int

    def note(self) -> str:
        parts = [self.change] if self.change else []
        if self.red_runs >= 2:
            parts.append(f"red {self.red_runs} runs in a row")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def truncate(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, the last one "…" when it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
